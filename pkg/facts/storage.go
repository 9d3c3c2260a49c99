package facts

import (
	"context"
	"time"

	"github.com/hectormem/hector/pkg/errkind"
)

// record is one version of a fact as stored: the value sealed, its length
// kept in the clear so a scope's budget can be checked without decrypting.
// A key's current version has no ValidTo; the versions before it, its
// history, have one.
type record struct {
	ID         string
	Scope      Scope
	Key        string
	Category   string
	Tags       []string
	Sealed     []byte
	ValueChars int
	Source     Source
	// ContentSig and EntitySig are keyed hashes of what deduplication
	// compares (see signatures), so that a write finds the facts it may
	// repeat without reading every value; "" when not computed yet.
	ContentSig, EntitySig string
	// Vector is the value's meaning (the embedder's vector), sealed as
	// the value is; nil without an embedder.
	Vector       []byte
	CreatedAt    time.Time // when the key's first version was written
	ValidFrom    time.Time // when this version began to hold
	ValidTo      time.Time // when it stopped holding; zero while current
	Supersedes   string    // the version this one replaced
	SupersededBy string    // the version that replaced this one; "" if none (invalidated)
	ExpiresAt    time.Time
}

// current reports whether the record is its key's current version.
func (r *record) current() bool { return r.ValidTo.IsZero() }

// validAt reports whether the version held at t, and had not expired.
func (r *record) validAt(t time.Time) bool {
	return !r.ValidFrom.After(t) && (r.current() || r.ValidTo.After(t)) && r.ExpiresAt.After(t)
}

// errMoved: the key's current version is no longer the one the write was
// based on (another writer got there first); nothing was written.
var errMoved = errkind.New(errkind.Conflict, "the fact was written by another writer at the same time; try again")

// storage is what a backend provides; the Service does validation,
// encryption, consolidation and expiry on top. Reads of current versions
// return only those live at now. Nothing but remove and sweep deletes a
// version: a replaced or ended one moves to the history.
type storage interface {
	// get returns the key's current version, if live at now.
	get(ctx context.Context, s Scope, key string, now time.Time) (*record, error)
	// replace makes next its key's current version in one transaction. The
	// version that was current (prev, nil for none) moves to the history,
	// ending at next.ValidFrom, superseded by next; the key's history
	// expires with next. If the current version is not prev, it returns
	// errMoved and changes nothing. A current version that has expired is
	// deleted, not kept.
	replace(ctx context.Context, prev *record, next record) error
	// end moves the current version prev to the history, ending at at with
	// no successor; errMoved if it is not current any more.
	end(ctx context.Context, prev record, at time.Time) error
	// extend moves the current version's expiry; errMoved if it is not
	// current any more.
	extend(ctx context.Context, prev record, expires time.Time) error
	// versions returns every stored version of the key, oldest first.
	versions(ctx context.Context, s Scope, key string) ([]record, error)
	// list returns the current versions live at now whose key starts with
	// prefix (and of one category, if given), newest first.
	list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error)
	// listAt returns the versions that held at t, whatever they are now,
	// with the same filters, newest first.
	listAt(ctx context.Context, s Scope, prefix, category string, t time.Time) ([]record, error)
	// remove deletes keys' versions, current and past ("" matches all), and
	// says how many live current versions it deleted.
	remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error)
	usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error)
	// removeUser deletes every version of every fact of one user, in the
	// user's scope and in their sessions' (not the app's), and says how
	// many versions it deleted.
	removeUser(ctx context.Context, app, user string) (int, error)
	// userVersions returns every version of every fact of one user, theirs
	// and their sessions', by scope and key, oldest first.
	userVersions(ctx context.Context, app, user string) ([]record, error)
	// owners returns up to limit users holding facts (of their own or
	// their sessions', current or past), after the position, by app then
	// user as Go compares strings; of app only when app is not "".
	owners(ctx context.Context, app string, after Owner, limit int) ([]Owner, error)
	// restore writes versions as they are, current ones as current and the
	// others into the history, in one transaction.
	restore(ctx context.Context, recs []record) error
	// taken reports whether any of these version IDs is stored, whoever's.
	taken(ctx context.Context, ids []string) (bool, error)
	// similar returns the current versions live at now with this content
	// signature, or this entity signature when it is not "".
	similar(ctx context.Context, s Scope, contentSig, entitySig string, now time.Time) ([]record, error)
	// unsigned returns current versions that have no signatures yet, and
	// sign gives one its signatures.
	unsigned(ctx context.Context) ([]record, error)
	sign(ctx context.Context, r record) error
	// sweep deletes every version that has expired, current or past.
	sweep(ctx context.Context, now time.Time) (int, error)
	canary(ctx context.Context) ([]byte, error) // nil if none yet
	setCanary(ctx context.Context, sealed []byte) error
}
