// Package pagesum registers a SQLite VFS that keeps a checksum in every
// page of a database file and checks it whenever the page is read: a
// damaged page is an error (SQLITE_IOERR_DATA) where SQLite alone would
// serve its rows, wrong or missing. Only files whose header reserves
// ReserveBytes a page keep sums; open them with the URI parameter
// vfs=<VFS> and, before the file's first page is written, set the
// reserve (SQLITE_FCNTL_RESERVE_BYTES) on the connection.
package pagesum

/*
#include <stdint.h>
#include "pagesum.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// VFS is the name to open files with (the URI parameter vfs).
const VFS = C.PAGESUM_VFS

// ReserveBytes is what a file reserves at the end of each page for its sum.
const ReserveBytes = 8

// FcntlReserveBytes is SQLITE_FCNTL_RESERVE_BYTES, for SQLiteConn.SetFileControlInt.
const FcntlReserveBytes = 38

var register = sync.OnceValue(func() error {
	if rc := C.pagesum_register(); rc != 0 {
		return fmt.Errorf("pagesum: registering the SQLite VFS: code %d", rc)
	}
	return nil
})

// Register registers the VFS with SQLite, once.
func Register() error { return register() }

// Damaged reports whether err says a page failed its checksum.
func Damaged(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == ioErrData
}

// ioErrData is SQLITE_IOERR_DATA.
const ioErrData = sqlite3.ErrNoExtended(10 | 32<<8)

// Sum is the checksum kept in the last 8 bytes of a page, over the rest
// (little-endian): for tests and tools that read pages themselves.
func Sum(page []byte) uint64 {
	if len(page) < 16 {
		return 0
	}
	return uint64(C.pagesum_compute((*C.uchar)(unsafe.Pointer(&page[0])), C.int(len(page)-8)))
}
