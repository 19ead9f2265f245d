package storage

import "syscall"

// changeTime is a file's status change time (ctime) in nanoseconds.
func changeTime(st *syscall.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }
