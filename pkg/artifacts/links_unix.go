//go:build unix

package artifacts

import (
	"io/fs"
	"syscall"
)

// links returns a file's hard-link count.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 2 // unknown: keep the file
}
