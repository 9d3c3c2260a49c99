package facts

import (
	"context"
	"time"
)

// record is a fact as stored: the value sealed, its length kept in the
// clear so a scope's budget can be checked without decrypting.
type record struct {
	Scope      Scope
	Key        string
	Category   string
	Tags       []string
	Sealed     []byte
	ValueChars int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	ExpiresAt  time.Time
}

// storage is what a backend provides; the Service does validation,
// encryption and expiry on top. Reads return only records live at now.
type storage interface {
	put(ctx context.Context, r record) error // insert, or replace keeping CreatedAt
	get(ctx context.Context, s Scope, key string, now time.Time) (*record, error)
	list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error) // newest first
	remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error)       // "" matches all
	usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error)
	sweep(ctx context.Context, now time.Time) (int, error)
	canary(ctx context.Context) ([]byte, error) // nil if none yet
	setCanary(ctx context.Context, sealed []byte) error
}
