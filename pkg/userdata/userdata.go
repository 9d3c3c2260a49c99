// Package userdata is the one list of the stores that hold something of a
// user besides their sessions, each reached the same way: forget what it
// holds of the user, count what is left, and, unless it is derived from
// the others, write it into the user's archive and read it back. Erasure
// (pkg/erase) and the archive (pkg/userarchive) are loops over this list,
// so a store added here cannot be forgotten by either.
package userdata

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
)

// Services are the stores a user's data is in; all but Sessions may be nil.
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Facts     *facts.Service
	Index     Indexer
	// Caches hold what was derived from the user's conversations.
	Caches []Cache
}

// Indexer is what is needed of the search index (index.Index is one): to
// remove every document of a user, of whichever session, saying how many
// it found, and to take in a restored session at once.
type Indexer interface {
	Forget(ctx context.Context, appName, userID string) (int, error)
	Index(ctx context.Context, s session.Session) error
}

// Cache is an in-process cache that can drop what a user's activity put
// in it (agent.ToolCache is one).
type Cache interface {
	Name() string
	ForgetUser(app, user string) int
}

// The stores' names, as receipts and archives give them.
const (
	Sessions  = "sessions"    // sessions, with their events and state
	UserState = "user_state"  // user: keys
	Artifacts = "artifacts"   // erased: the user's own (user:); archived: every one
	Facts     = "facts"       // versions of the user's and their sessions' facts
	Index     = "index"       // documents of the sessions' events
	Feed      = "change_feed" // tombstones naming the deleted sessions
)

// Store is one store's part of a user.
type Store struct {
	Name string
	// Forget removes what the store holds of the user, saying how much.
	// A session's own data (its artifacts, facts, documents) goes with
	// the session when it is deleted.
	Forget func(ctx context.Context) (int, error)
	// Left counts what the store still holds of the user; nil for a store
	// that cannot be asked, which verification forgets again instead (what
	// that finds is left, and removed).
	Left func(ctx context.Context) (int, error)
	// First: removed before the sessions go, and verified last. The index
	// counts a user's documents before deleting their sessions clears
	// them, and its follower may write what the feed held meanwhile.
	First bool
	// Derived: made from the other stores again (the index, the change
	// feed's tombstones, caches), so a user's archive leaves it out, and
	// Export and Import are nil.
	Derived bool
	// Export writes what the store holds of the user as files of their
	// archive, each named under Name + "/", after the sessions.
	Export func(ctx context.Context, put Put) error
	// Import starts writing such files back for the user, as imported by
	// by (a credential's name).
	Import func(ctx context.Context, by string) Importer
}

// Put adds one file to an archive.
type Put func(name string, size int64, modTime time.Time, body io.Reader) error

// json puts a file holding v as JSON.
func (put Put) json(name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return put(name, int64(len(raw)), time.Now().UTC(), bytes.NewReader(raw))
}

// Importer writes back the files of one store's part, in the order Export
// put them. A file that is not what it should be is refused with
// ErrBadArchive.
type Importer struct {
	File func(ctx context.Context, name string, body io.Reader) error
	// Done says how many items it wrote, or refuses a part cut short.
	Done func(ctx context.Context) (int, error)
}

// Stores are the stores of svcs besides the sessions themselves, for the
// user app/user.
func Stores(svcs Services, app, user string) []Store {
	var out []Store
	if svcs.Index != nil {
		// Every document of theirs, whichever session it came from (one of
		// a session deleted long ago that a missed tombstone left behind).
		out = append(out, Store{Name: Index, First: true, Derived: true,
			Forget: func(ctx context.Context) (int, error) { return svcs.Index.Forget(ctx, app, user) }})
	}
	if feed, ok := svcs.Sessions.(session.TombstoneEraser); ok {
		// The change feed's tombstones name the deleted sessions, for the
		// index, which has forgotten them.
		out = append(out, Store{Name: Feed, Derived: true, Forget: func(ctx context.Context) (int, error) {
			n, err := feed.EraseTombstones(ctx, app, user)
			if err != nil {
				return 0, fmt.Errorf("erasing the change feed's tombstones: %w", err)
			}
			return n, nil
		}})
	}
	if svcs.Sessions != nil {
		out = append(out, userState(svcs.Sessions, app, user))
	}
	if svcs.Artifacts != nil && svcs.Sessions != nil {
		out = append(out, userArtifacts(svcs.Artifacts, svcs.Sessions, app, user))
	}
	if svcs.Facts != nil {
		out = append(out, userFacts(svcs.Facts, app, user))
	}
	for _, c := range svcs.Caches {
		out = append(out, Store{Name: c.Name(), Derived: true,
			Forget: func(context.Context) (int, error) { return c.ForgetUser(app, user), nil }})
	}
	return out
}

// ErrBadArchive: an archive's file is not what it should be; the import
// is refused.
var ErrBadArchive = errkind.New(errkind.InvalidArgument, "the archive is not one this Hector can restore")

// Bad is an ErrBadArchive saying what is wrong.
func Bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadArchive}, args...)...)
}

func unexpected(name string) error {
	return Bad("it holds %s, which is no file of its part or comes out of order", name)
}

// maxFile bounds a file an importer reads whole (user: state, the facts'
// versions: a few thousand characters a scope).
const maxFile = 64 << 20

// decodeFile reads a file an importer takes whole, one JSON value.
func decodeFile(name string, body io.Reader, v any) error {
	raw, err := io.ReadAll(io.LimitReader(body, maxFile+1))
	switch {
	case err != nil:
		return Bad("reading %s: %v", name, err)
	case len(raw) > maxFile:
		return Bad("%s is over the limit of %d MiB", name, maxFile>>20)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Bad("%s: %v", name, err)
	}
	return nil
}
