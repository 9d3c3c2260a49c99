// Package datadir guards a data directory: one process at a time owns the
// in-process index files in it.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrLocked: another process owns the data directory.
var ErrLocked = errors.New("data directory is in use")

// Lock takes dir for this process, writing owner (the server's URL, say)
// into the lock file for whoever finds it taken. The lock goes with the
// process, however it ends.
func Lock(dir, owner string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "hector.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		held, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("%w: %s holds %s", ErrLocked, strings.TrimSpace(string(held)), dir)
	}
	f.Truncate(0)
	f.WriteAt([]byte(owner+"\n"), 0)
	return func() {
		f.Truncate(0)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// Owner returns what the process holding dir wrote in its lock file.
func Owner(dir string) string {
	held, _ := os.ReadFile(filepath.Join(dir, "hector.lock"))
	return strings.TrimSpace(string(held))
}
