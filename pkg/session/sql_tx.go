package session

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
)

// Reads and writes go through database/sql with cached prepared statements
// rather than through GORM: an append is a few short statements, and GORM's
// per-statement building cost more than the statements themselves (an
// append on SQLite measured 1.5x slower through GORM; a Get spent a fifth
// of its time in GORM's reflective scans).

// stmtCache prepares each distinct statement once per database.
type stmtCache struct {
	db      *sql.DB
	dialect string // sqlite, postgres or mysql
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // being prepared
	running sync.WaitGroup  // the background preparations
	closed  bool
}

// get returns query prepared for use in tx. A statement the database has
// not prepared yet is prepared on tx's own connection for this one use,
// and for the database in the background: preparing it for the database
// needs a free connection, and a caller inside a transaction that waited
// for one could wait forever when every connection of a bounded pool is
// held by such a caller.
func (c *stmtCache) get(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	if !ok && !c.pending[query] && !c.closed {
		c.pending[query] = true
		c.running.Go(func() { c.prepare(query) })
	}
	c.mu.Unlock()
	if ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, c.text(query))
}

// queryPool runs query outside any transaction, through a statement
// prepared for the database once: a single statement costs one round trip
// then, where an unprepared one costs MySQL three (prepare, execute, close).
func (c *stmtCache) queryPool(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	c.mu.Unlock()
	if !ok {
		var err error
		if st, err = c.db.PrepareContext(ctx, c.text(query)); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if cached, ok := c.stmts[query]; ok || c.closed { // prepared meanwhile, or not to be kept
			st.Close()
			st = cached
		} else {
			c.stmts[query] = st
		}
		c.mu.Unlock()
		if st == nil {
			return c.db.QueryContext(ctx, c.text(query), args...)
		}
	}
	return st.QueryContext(ctx, args...)
}

// text is query in the database's words.
func (c *stmtCache) text(query string) string {
	return dialectText(c.dialect, query)
}

// dialectText is query in the words of the dialect's database.
func dialectText(dialect, query string) string {
	if dialect == "postgres" {
		return numberPlaceholders(query)
	}
	return query
}

func (c *stmtCache) prepare(query string) {
	st, err := c.db.Prepare(c.text(query))
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, query)
	switch {
	case err != nil: // the next use tries again
	case c.closed:
		st.Close()
	default:
		c.stmts[query] = st
	}
}

// close waits for the background preparations and closes the statements,
// so that nothing of the cache touches the database afterwards.
func (c *stmtCache) close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.running.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for query, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, query)
	}
	return errors.Join(errs...)
}

// numberPlaceholders rewrites ? placeholders as PostgreSQL's $1, $2, …
// The statements here never hold a literal question mark.
func numberPlaceholders(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sqlTx is a transaction running prepared statements.
type sqlTx struct {
	ctx     context.Context
	conn    txConn
	dialect string // sqlite, postgres or mysql
}

// txConn is the connection a transaction runs on: a database/sql
// transaction (poolTx), or SQLite's write connection (sqliteWriter).
type txConn interface {
	// prepared returns query, in the database's words, prepared for this transaction.
	prepared(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// poolTx is a database/sql transaction using the pool's statement cache.
type poolTx struct {
	*sql.Tx
	stmts *stmtCache
}

func (t poolTx) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.stmts.get(ctx, t.Tx, query)
}

func (w *sqlTx) stmt(query string) (*sql.Stmt, error) {
	return w.conn.prepared(w.ctx, query)
}

// exec runs a statement and returns how many rows it changed.
func (w *sqlTx) exec(query string, args ...any) (int64, error) {
	st, err := w.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(w.ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// execID runs a statement and returns how many rows it changed and the
// value it gave LAST_INSERT_ID (MySQL's way of handing back a number).
func (w *sqlTx) execID(query string, args ...any) (rows, id int64, err error) {
	st, err := w.stmt(query)
	if err != nil {
		return 0, 0, err
	}
	res, err := st.ExecContext(w.ctx, args...)
	if err != nil {
		return 0, 0, err
	}
	if rows, err = res.RowsAffected(); err != nil {
		return 0, 0, err
	}
	id, err = res.LastInsertId()
	return rows, id, err
}

// returning runs a statement ending in RETURNING one integer column; ok is
// false when it touched no row.
func (w *sqlTx) returning(query string, args ...any) (v int64, ok bool, err error) {
	ok, err = w.scanRow(query, args, &v)
	return v, ok, err
}

// scanRow runs a query for at most one row and scans it into dest; found
// is false when there is no row.
func (w *sqlTx) scanRow(query string, args []any, dest ...any) (found bool, err error) {
	st, err := w.stmt(query)
	if err != nil {
		return false, err
	}
	err = st.QueryRowContext(w.ctx, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// query runs a query through a cached statement.
func (w *sqlTx) query(query string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(w.ctx, args...)
}

// queryOnce runs a query whose text varies (an IN list, say) without
// caching a statement for it.
func (w *sqlTx) queryOnce(query string, args ...any) (*sql.Rows, error) {
	return w.conn.QueryContext(w.ctx, dialectText(w.dialect, query), args...)
}

// runTx runs fn in a transaction and commits it if fn returns nil.
func runTx(ctx context.Context, db *sql.DB, stmts *stmtCache, opts *sql.TxOptions, fn func(*sqlTx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(&sqlTx{ctx: ctx, conn: poolTx{tx, stmts}, dialect: stmts.dialect}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
