package sqldb

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// Unavailable reports whether err says the database cannot serve now (down,
// unreachable, out of connections or disk, locked past the busy timeout)
// rather than that the request was wrong: a client may retry the former.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var pgErr *pgconn.PgError
	var pgConnect *pgconn.ConnectError
	var liteErr sqlite3.Error
	var myErr *mysqldriver.MySQLError
	var unsent interface{ SafeToRetry() bool } // pgx: the statement never reached the server (a closed connection, say)
	switch {
	case errors.As(err, &unsent) && unsent.SafeToRetry():
		return true
	// io.ErrUnexpectedEOF: a connection that broke in the middle of a statement.
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysqldriver.ErrInvalidConn), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ENOSPC),
		errors.As(err, &netErr), errors.As(err, &pgConnect):
		return true
	case errors.As(err, &pgErr):
		// Classes 08 (connection), 53 (out of resources: disk, memory,
		// connections), 57 (shut down by an operator) and 58 (I/O).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") ||
			strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "58")
	case errors.As(err, &liteErr):
		switch liteErr.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrFull, sqlite3.ErrIoErr, sqlite3.ErrCantOpen, sqlite3.ErrNomem, sqlite3.ErrReadonly:
			return true
		}
	case errors.As(err, &myErr):
		switch myErr.Number {
		case 1021, 1040, 1053, 1114, 1205, 1213, 2002, 2003, 2006, 2013: // disk full, too many connections, shutdown, table full, lock wait, deadlock, gone away
			return true
		}
	}
	return false
}

// DiskFull reports whether err says the database's disk is full: a
// client's retry waits for someone to free space, and should say so.
func DiskFull(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	var liteErr sqlite3.Error
	var myErr *mysqldriver.MySQLError
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return true
	case errors.As(err, &pgErr):
		return pgErr.Code == "53100" // disk_full
	case errors.As(err, &liteErr):
		return liteErr.Code == sqlite3.ErrFull
	case errors.As(err, &myErr):
		return myErr.Number == 1021 || myErr.Number == 1114
	}
	return false
}
