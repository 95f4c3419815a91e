//go:build unix

package zulipexport

import (
	"io/fs"
	"syscall"
)

// linkCount answers how many names the file has, where the system says.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
