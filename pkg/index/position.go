package index

import (
	"context"
	"sync"
)

// Position is how far along the sessions' change feed an external index
// is, kept where every replica can read it (the sessions' database), with
// a lease that lets one replica at a time follow the feed.
type Position interface {
	// Lead makes this process the index's one follower unless another
	// process is. It is cheap to call again: a leader stays leader until
	// Close, or until its process dies, when another may take over.
	Lead(ctx context.Context) (bool, error)
	// Cursor is where the feed is applied up to.
	Cursor(ctx context.Context) (int64, error)
	// Advance moves the cursor from from to to, and reports false if it was
	// not at from (a rebuild rewound it meanwhile).
	Advance(ctx context.Context, from, to int64) (bool, error)
	// Rewind moves the cursor back to to if it is past it: a rebuild that
	// read the feed up to to leaves the rest to the follower.
	Rewind(ctx context.Context, to int64) error
	Close() error
}

// NewInMemoryPosition keeps the cursor in this process, which always leads:
// for an external index that only this process uses (and for tests).
func NewInMemoryPosition() Position { return &memoryPosition{} }

type memoryPosition struct {
	mu     sync.Mutex
	cursor int64
}

func (p *memoryPosition) Lead(context.Context) (bool, error) { return true, nil }

func (p *memoryPosition) Cursor(context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cursor, nil
}

func (p *memoryPosition) Advance(_ context.Context, from, to int64) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cursor != from {
		return false, nil
	}
	p.cursor = to
	return true, nil
}

func (p *memoryPosition) Rewind(_ context.Context, to int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cursor = min(p.cursor, to)
	return nil
}

func (p *memoryPosition) Close() error { return nil }
