package session

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
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

// run runs fn in the next group on wr and returns its outcome.
func (g *groupCommit) run(ctx context.Context, wr *sqliteWriter, fn func(*sqlTx) error) error {
	w := &queuedWrite{ctx: ctx, fn: fn, done: make(chan error, 1)}
	start := time.Now()
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.running {
		g.mu.Unlock()
		err := w.outcome() // the leader runs it; its outcome is final either way
		// What an operator asks of a slow append: how long it waited for the group that committed it.
		trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("hector.group_commit.led", false),
			attribute.Float64("hector.group_commit.ms", float64(time.Since(start).Microseconds())/1000))
		return err
	}
	defer func() {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Bool("hector.group_commit.led", true),
			attribute.Float64("hector.group_commit.ms", float64(time.Since(start).Microseconds())/1000))
	}()
	// The first write to find no group running leads: it commits groups
	// until the queue is empty, its own in the first.
	g.running = true
	for len(g.queue) > 0 {
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		commitGroup(wr, batch)
		g.mu.Lock()
	}
	g.running = false
	g.mu.Unlock()
	return w.outcome()
}

// outcome waits for the write's outcome. A write that panicked panics
// again here, in its caller's goroutine, rather than in the leader's.
func (w *queuedWrite) outcome() error {
	err := <-w.done
	if p, ok := err.(*writePanic); ok {
		panic(p)
	}
	return err
}

// writePanic is a write's panic, carried from the leader to the writer.
type writePanic struct {
	value any
	stack []byte
}

func (p *writePanic) Error() string {
	return fmt.Sprintf("session: a write panicked: %v\n\n%s", p.value, p.stack)
}

// run runs w in t. A panic fails w alone: were it to unwind the
// leader, the group would stay marked running and every later write would
// wait forever.
func (w *queuedWrite) run(t *sqlTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &writePanic{r, debug.Stack()}
		}
	}()
	return w.fn(t)
}

// commitGroup runs a batch of writes in one transaction, each in a
// savepoint of its own unless it is alone. The transaction is the group's,
// not one caller's: a caller that goes away fails its own write only.
func commitGroup(wr *sqliteWriter, batch []*queuedWrite) {
	results := make([]error, len(batch))
	err := wr.transaction(func(t *sqlTx) error {
		if len(batch) == 1 { // alone: no savepoint to pay for
			if results[0] = batch[0].ctx.Err(); results[0] == nil {
				results[0] = batch[0].run(t)
			}
			return results[0]
		}
		for i, w := range batch {
			if results[i] = w.ctx.Err(); results[i] != nil {
				continue
			}
			if _, err := t.exec("SAVEPOINT group_write"); err != nil {
				return err
			}
			var err error
			if results[i] = w.run(t); results[i] != nil {
				_, err = t.exec("ROLLBACK TO SAVEPOINT group_write")
			} else {
				_, err = t.exec("RELEASE SAVEPOINT group_write")
			}
			if err != nil { // the transaction cannot go on: nothing in it commits
				return err
			}
		}
		return nil
	})
	// A write that failed keeps its own error; the others get the
	// transaction's outcome: nil once committed, else why it was not.
	for i, w := range batch {
		if results[i] == nil {
			results[i] = err
		}
		w.done <- results[i]
	}
}
