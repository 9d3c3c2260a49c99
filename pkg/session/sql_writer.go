package session

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
)

// sqliteWriter is the one connection SQLite writes go through. SQLite runs
// one writer at a time anyway, and a connection of its own, with every
// statement prepared on it once and transactions begun and committed by
// statements, costs an append a quarter less CPU than a database/sql
// transaction on a pooled connection: that starts a goroutine per
// transaction (waking another thread to run it) and binds each cached
// statement to the transaction's connection anew.
//
// It is held from the first write until Close, so a SQLite pool must have
// room for readers beside it (NewSQLService checks).
type sqliteWriter struct {
	db *sql.DB
	// mu is the database's write lock (writelock.Of), which facts,
	// artifacts and index positions on the same file take too: their
	// writes queue with the session service's. It also keeps Close out of
	// a running transaction.
	mu     *sync.Mutex
	conn   *sql.Conn
	stmts  map[string]*sql.Stmt
	closed bool
}

// transaction runs fn between BEGIN IMMEDIATE and COMMIT, and rolls back
// if fn or the commit fails. Its statements ignore cancellation: a caller
// that goes away is noticed before its write starts, and go-sqlite3 would
// otherwise start a goroutine per statement to watch for it.
func (wr *sqliteWriter) transaction(fn func(*sqlTx) error) error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if err := wr.open(); err != nil {
		return err
	}
	t := &sqlTx{ctx: context.Background(), conn: wr, dialect: "sqlite"}
	// IMMEDIATE takes the write lock now, waiting for another process's
	// writer as long as the busy timeout allows, rather than at the first
	// write, where a stale read snapshot fails at once.
	if _, err := t.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err := fn(t)
	if err == nil {
		if _, err = t.exec("COMMIT"); err == nil {
			return nil
		}
	}
	if _, rbErr := t.exec("ROLLBACK"); rbErr != nil {
		// Whether a transaction is still open is unknown: start afresh.
		wr.discard()
	}
	return err
}

func (wr *sqliteWriter) open() error {
	if wr.closed {
		return ErrClosed
	}
	if wr.conn != nil {
		return nil
	}
	conn, err := wr.db.Conn(context.Background())
	if err != nil {
		return err
	}
	wr.conn, wr.stmts = conn, make(map[string]*sql.Stmt)
	return nil
}

// prepared returns query prepared on the write connection.
func (wr *sqliteWriter) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := wr.stmts[query]; ok {
		return st, nil
	}
	st, err := wr.conn.PrepareContext(ctx, query)
	if err == nil {
		wr.stmts[query] = st
	}
	return st, err
}

func (wr *sqliteWriter) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return wr.conn.QueryContext(ctx, query, args...)
}

func (wr *sqliteWriter) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return wr.conn.ExecContext(ctx, query, args...)
}

// discard closes the connection and its statements; the pool drops it.
func (wr *sqliteWriter) discard() {
	for _, st := range wr.stmts {
		st.Close()
	}
	wr.conn.Raw(func(any) error { return driver.ErrBadConn })
	wr.conn.Close()
	wr.conn, wr.stmts = nil, nil
}

// close gives the connection back to the pool; later writes fail.
func (wr *sqliteWriter) close() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	wr.closed = true
	if wr.conn == nil {
		return nil
	}
	for _, st := range wr.stmts {
		st.Close()
	}
	err := wr.conn.Close()
	wr.conn, wr.stmts = nil, nil
	return err
}
