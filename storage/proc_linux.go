package storage

import (
	"os"
	"strconv"
	"syscall"
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

// localFSTypes are the statfs(2) magic numbers of the filesystems whose unlink of an
// open file is immediate and whose flock is the kernel's own: ext2-4, XFS, Btrfs,
// tmpfs, overlayfs, ZFS. (NFS renames an open file it unlinks to .nfsXXXX, and its
// clients may see the old name a while from cache.)
var localFSTypes = map[int64]bool{0xEF53: true, 0x58465342: true, 0x9123683E: true, 0x01021994: true, 0x794C7630: true, 0x2FC12FC1: true}

// localFS reports whether dir is on one of localFSTypes.
func localFS(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return localFSTypes[int64(st.Type)]
}
