//go:build unix && !linux

package storage

import "syscall"

// changeTime is 0 where this code does not know the Stat_t field of the change time:
// FileIdentity then rests on the inode, size and modification time.
func changeTime(*syscall.Stat_t) int64 { return 0 }
