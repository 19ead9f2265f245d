package storage

import (
	"os"
	"strconv"
	"strings"
)

// processIdentity names process pid's PID namespace and start time (clock ticks since
// boot, from /proc/PID/stat), or "" for a process that does not exist.
func processIdentity(pid int) (ns, start string) {
	p := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(p + "/stat")
	if err != nil {
		return "", ""
	}
	// The command name (field 2) may hold spaces and parentheses: fields count from
	// the last ')'; starttime is field 22.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		f := strings.Fields(s[i+1:])
		if len(f) > 19 {
			start = f[19]
		}
	}
	ns, _ = os.Readlink(p + "/ns/pid")
	if ns == "" {
		ns = "unknown" // no namespaces: one per host
	}
	return ns, start
}
