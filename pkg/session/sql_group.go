package session

import (
	"context"
	"database/sql"
	"sync"
)

// groupCommit lets concurrent writes share a transaction and its commit:
// writes that arrive while a commit is in flight wait for it, then go
// together in the next. Each runs inside a savepoint of its own, so one
// that fails rolls back alone and its neighbours commit; every write learns
// its own outcome, and none is acknowledged before the commit that holds
// it. One fsync (one commit round trip on a server) then carries many
// appends.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*queuedWrite
	running bool
}

type queuedWrite struct {
	ctx  context.Context
	fn   func(*sqlTx) error
	done chan error
}

// run runs fn in the next group and returns its outcome.
func (g *groupCommit) run(ctx context.Context, db *sql.DB, stmts *stmtCache, fn func(*sqlTx) error) error {
	w := &queuedWrite{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.running {
		g.mu.Unlock()
		return <-w.done // the leader runs it; its outcome is final either way
	}
	// The first write to find no group running leads: it commits groups
	// until the queue is empty, its own in the first.
	g.running = true
	for len(g.queue) > 0 {
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		commitGroup(db, stmts, batch)
		g.mu.Lock()
	}
	g.running = false
	g.mu.Unlock()
	return <-w.done
}

func commitGroup(db *sql.DB, stmts *stmtCache, batch []*queuedWrite) {
	if len(batch) == 1 { // alone: no savepoint to pay for
		w := batch[0]
		w.done <- runTx(w.ctx, db, stmts, nil, w.fn)
		return
	}
	// The transaction is the group's, not one caller's: a caller that goes
	// away fails its own write only.
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	results := make([]error, len(batch))
	group := &sqlTx{ctx: context.Background(), tx: tx, stmts: stmts} // savepoints: prepared once, like the writes
	for i, w := range batch {
		if results[i] = w.ctx.Err(); results[i] != nil {
			continue
		}
		if _, err := group.exec("SAVEPOINT group_write"); err != nil {
			results[i] = err
			continue
		}
		if results[i] = w.fn(&sqlTx{ctx: w.ctx, tx: tx, stmts: stmts}); results[i] != nil {
			_, err = group.exec("ROLLBACK TO SAVEPOINT group_write")
		} else {
			_, err = group.exec("RELEASE SAVEPOINT group_write")
		}
		if err != nil { // the transaction cannot go on: nothing in it commits
			tx.Rollback()
			for j, w := range batch {
				if j > i || results[j] == nil {
					results[j] = err
				}
				w.done <- results[j]
			}
			return
		}
	}
	err = tx.Commit()
	for i, w := range batch {
		if results[i] == nil {
			results[i] = err
		}
		w.done <- results[i]
	}
}
