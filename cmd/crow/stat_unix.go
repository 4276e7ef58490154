//go:build unix

package main

import (
	"os"
	"syscall"
)

// statIDs returns a file's device, inode and owner uid (ok false where the
// system does not say).
func statIDs(fi os.FileInfo) (dev, ino uint64, uid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), st.Uid, true
}
