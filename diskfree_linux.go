//go:build linux

package main

import "syscall"

// diskFreeChecked: --upload-disk-reserve-mib is enforced on this system.
const diskFreeChecked = true

// diskFree answers the bytes an unprivileged process may still write on
// the filesystem holding path (statfs(2)'s f_bavail): one system call,
// cheap enough for every upload.
func diskFree(path string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
