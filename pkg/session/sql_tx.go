package session

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
)

// Writes go through database/sql with cached prepared statements rather
// than through GORM: an append is five short statements, and GORM's
// per-statement building cost more than the statements themselves (an
// append on SQLite measured 1.5x slower through GORM).

// stmtCache prepares each distinct statement once per database.
type stmtCache struct {
	db      *sql.DB
	dialect string // sqlite, postgres or mysql
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // being prepared
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
	if !ok && !c.pending[query] {
		c.pending[query] = true
		go c.prepare(query)
	}
	c.mu.Unlock()
	if ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, c.text(query))
}

// text is query in the database's words.
func (c *stmtCache) text(query string) string {
	if c.dialect == "postgres" {
		return numberPlaceholders(query)
	}
	return query
}

func (c *stmtCache) prepare(query string) {
	st, err := c.db.Prepare(c.text(query))
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, query)
	if err == nil { // else the next use tries again
		c.stmts[query] = st
	}
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

// writeTx is a write transaction running prepared statements.
type writeTx struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts *stmtCache
}

func (w *writeTx) stmt(query string) (*sql.Stmt, error) {
	return w.stmts.get(w.ctx, w.tx, query)
}

// exec runs a statement and returns how many rows it changed.
func (w *writeTx) exec(query string, args ...any) (int64, error) {
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
func (w *writeTx) execID(query string, args ...any) (rows, id int64, err error) {
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
func (w *writeTx) returning(query string, args ...any) (v int64, ok bool, err error) {
	st, err := w.stmt(query)
	if err != nil {
		return 0, false, err
	}
	err = st.QueryRowContext(w.ctx, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// runWrite runs fn in a transaction and commits it if fn returns nil.
func runWrite(ctx context.Context, db *sql.DB, stmts *stmtCache, fn func(*writeTx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(&writeTx{ctx: ctx, tx: tx, stmts: stmts}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
