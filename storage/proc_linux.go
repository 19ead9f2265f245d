package storage

import (
	"os"
	"strconv"
)

// processIdentity names process pid's PID namespace and start time (clock ticks since
// boot, from /proc/PID/stat), or "" for a process that does not exist.
func processIdentity(pid int) (ns, start string) {
	p := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(p + "/stat")
	if err != nil {
		return "", ""
	}
	start = procStartTime(string(stat))
	ns, _ = os.Readlink(p + "/ns/pid")
	if ns == "" {
		ns = "unknown" // no namespaces: one per host
	}
	return ns, start
}
