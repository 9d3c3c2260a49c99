// Package erase forgets a person: every session of one (app, user) with
// its events, state, artifacts, facts and index entries, the user's own
// state, artifacts and facts (with their history), and then looks again
// in every store, so that its receipt says what was found, what was
// removed, and that nothing is left.
package erase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

// Index is what erasure needs of the search index: to remove every
// document of a user, of whichever session, saying how many it found
// (index.Index.Forget).
type Index interface {
	Forget(ctx context.Context, appName, userID string) (int, error)
}

// Services are the stores a user is erased from; all but Sessions may be
// nil (User drops Sessions too when it resumes an erasure of an ID that
// only the facts ever took).
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Facts     *facts.Service
	Index     Index
	// Caches hold what was derived from the user's conversations.
	Caches []Cache
}

// Cache is an in-process cache that can drop what a user's activity put
// in it (agent.ToolCache is one).
type Cache interface {
	Name() string
	ForgetUser(app, user string) int
}

// Count is one store's part of a receipt.
type Count struct {
	Store   string `json:"store"`
	Removed int    `json:"removed"`
	Left    int    `json:"left"` // found by the verification pass
}

// Receipt says what erasing a user did, without any of its content.
type Receipt struct {
	AppName string `json:"app_name"`
	UserID  string `json:"user_id"`
	By      string `json:"by"` // the credential that asked
	// State is StateRunning until the erasure is done: a receipt left
	// running by a crash is finished by the next start (Resumed counts it).
	State    string    `json:"state"`
	Resumed  int       `json:"resumed,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Stores   []Count   `json:"stores"`
	// Verified: the verification pass found nothing of the user in any store.
	Verified bool `json:"verified"`
	// Pending is the session being deleted, while it is: a stop before its
	// count was recorded is counted when the erasure resumes.
	Pending string `json:"pending,omitempty"`
}

// The stores of a receipt.
const (
	StoreSessions  = "sessions"    // sessions, with their events and state
	StoreUserState = "user_state"  // user: keys
	StoreArtifacts = "artifacts"   // the user's own (user:) artifacts; sessions' go with them
	StoreFacts     = "facts"       // versions of the user's and their sessions' facts
	StoreIndex     = "index"       // documents of the sessions' events
	StoreFeed      = "change_feed" // tombstones naming the deleted sessions
)

// The states of a receipt.
const (
	StateRunning = "running"
	StateDone    = "done"
)

// Options are how an erasure records itself.
type Options struct {
	// Progress, when set, is given the receipt as it is before the first
	// change and after each, so that a crash leaves a record to resume
	// from; an error stops the erasure.
	Progress func(*Receipt) error
	// Resume goes on from a receipt a crash left running: its counts are
	// added to.
	Resume *Receipt
	// Settle is how long to wait, once the receipt is first recorded,
	// before removing anything: replicas that watch the receipts (Runner)
	// hold the user's writes by then.
	Settle time.Duration
}

// User erases one user from svcs. Erasing again finds nothing and removes
// nothing: it is safe to retry.
func User(ctx context.Context, svcs Services, appName, userID, by string, opts Options) (*Receipt, error) {
	if err := checkIDs(appName, userID); err != nil {
		if opts.Resume == nil { // refused before anything is recorded
			return nil, err
		}
		// A receipt recorded before IDs were checked first: of the
		// stores, only the facts ever took such an ID.
		svcs = Services{Facts: svcs.Facts, Caches: svcs.Caches}
	}
	e := &erasure{svcs: svcs, app: appName, user: userID, progress: opts.Progress,
		r: &Receipt{AppName: appName, UserID: userID, By: by, State: StateRunning, Started: time.Now().UTC()}}
	if opts.Resume != nil {
		e.r = opts.Resume
		e.r.State, e.r.Resumed = StateRunning, e.r.Resumed+1
	}
	// Every store is in the receipt, sessions first, whatever it holds.
	e.count(StoreSessions)
	for _, c := range svcs.Caches {
		e.count(c.Name())
	}
	if err := e.record(); err != nil {
		return nil, err
	}
	if opts.Settle > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(opts.Settle):
		}
	}
	// A write that was under way when the erasure began can land after a
	// store was emptied: the verification finds it, and a second round
	// removes it (writes that begin later are held, see Runner.Held).
	for round := 1; ; round++ {
		if err := e.remove(ctx); err != nil {
			return nil, err
		}
		if err := e.verify(ctx); err != nil {
			return nil, err
		}
		if e.r.Verified || round == maxRounds {
			break
		}
	}
	e.r.State, e.r.Finished = StateDone, time.Now().UTC()
	return e.r, e.record()
}

// maxRounds bounds how often an erasure removes what its verification found.
const maxRounds = 3

func checkIDs(appName, userID string) error {
	if err := ident.Check("app name", appName); err != nil {
		return err
	}
	return ident.Check("user ID", userID)
}

// erasure is one erasure under way, with its receipt.
type erasure struct {
	svcs      Services
	app, user string
	r         *Receipt
	progress  func(*Receipt) error
}

func (e *erasure) record() error {
	if e.progress == nil {
		return nil
	}
	return e.progress(e.r)
}

func (e *erasure) count(store string) *Count {
	for i := range e.r.Stores {
		if e.r.Stores[i].Store == store {
			return &e.r.Stores[i]
		}
	}
	e.r.Stores = append(e.r.Stores, Count{Store: store})
	return &e.r.Stores[len(e.r.Stores)-1]
}

// Store is one store's part of a person, as an erasure and an export
// reach it.
type Store struct {
	Name string
	// Forget removes what the store holds of the user, saying how much.
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
	// feed's tombstones, caches), so a user's archive leaves it out. Every
	// other store's part goes in the archive (TestEveryStoreThatIsNotDerivedIsExported).
	Derived bool
}

// Stores are the stores of svcs besides the sessions themselves: every
// store an erasure removes the user from and verifies, and an export
// writes, in one list.
func Stores(svcs Services, app, user string) []Store {
	var out []Store
	if svcs.Index != nil {
		// Every document of theirs, whichever session it came from (one of
		// a session deleted long ago that a missed tombstone left behind).
		out = append(out, Store{Name: StoreIndex, First: true, Derived: true,
			Forget: func(ctx context.Context) (int, error) { return svcs.Index.Forget(ctx, app, user) }})
	}
	if feed, ok := svcs.Sessions.(session.TombstoneEraser); ok {
		// The change feed's tombstones name the deleted sessions, for the
		// index, which has forgotten them.
		out = append(out, Store{Name: StoreFeed, Derived: true, Forget: func(ctx context.Context) (int, error) {
			n, err := feed.EraseTombstones(ctx, app, user)
			if err != nil {
				return 0, fmt.Errorf("erasing the change feed's tombstones: %w", err)
			}
			return n, nil
		}})
	}
	if svcs.Sessions != nil {
		out = append(out, Store{Name: StoreUserState,
			Forget: func(ctx context.Context) (int, error) { return eraseUserState(ctx, svcs.Sessions, app, user) },
			Left: func(ctx context.Context) (int, error) {
				st, err := svcs.Sessions.UserState(ctx, app, user)
				return len(st), err
			}})
	}
	if svcs.Artifacts != nil {
		out = append(out, Store{Name: StoreArtifacts,
			Forget: func(ctx context.Context) (int, error) { return eraseUserArtifacts(ctx, svcs.Artifacts, app, user) },
			Left: func(ctx context.Context) (int, error) {
				names, err := userArtifacts(ctx, svcs.Artifacts, app, user)
				return len(names), err
			}})
	}
	if svcs.Facts != nil {
		out = append(out, Store{Name: StoreFacts,
			Forget: func(ctx context.Context) (int, error) { return svcs.Facts.ForgetUser(ctx, app, user) },
			Left: func(ctx context.Context) (int, error) {
				versions, err := svcs.Facts.UserFacts(ctx, app, user)
				return len(versions), err
			}})
	}
	for _, c := range svcs.Caches {
		out = append(out, Store{Name: c.Name(), Derived: true,
			Forget: func(context.Context) (int, error) { return c.ForgetUser(app, user), nil }})
	}
	return out
}

func (e *erasure) stores() []Store { return Stores(e.svcs, e.app, e.user) }

// remove removes the user from every store, counting what it removes.
func (e *erasure) remove(ctx context.Context) error {
	stores := e.stores()
	forget := func(first bool) error {
		for _, s := range stores {
			if s.First != first {
				continue
			}
			n, err := s.Forget(ctx)
			if err != nil {
				return err
			}
			e.count(s.Name).Removed += n
			if err := e.record(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := forget(true); err != nil {
		return err
	}
	if e.svcs.Sessions != nil {
		if err := e.removeSessions(ctx); err != nil {
			return err
		}
	}
	return forget(false)
}

// removeSessions deletes the user's sessions, and through their delete
// hooks what belongs to each. The session about to go is recorded first,
// so that a stop in between is counted exactly when the erasure resumes.
func (e *erasure) removeSessions(ctx context.Context) error {
	ids, err := session.IDs(ctx, e.svcs.Sessions, e.app, e.user)
	if err != nil {
		return err
	}
	if pending := e.r.Pending; pending != "" { // deleted or not when it stopped
		if !slices.Contains(ids, pending) {
			e.count(StoreSessions).Removed++
		}
		e.r.Pending = ""
	}
	for _, id := range ids {
		e.r.Pending = id
		if err := e.record(); err != nil {
			return err
		}
		err := e.svcs.Sessions.Delete(ctx, &session.DeleteRequest{AppName: e.app, UserID: e.user, SessionID: id})
		switch {
		case err == nil:
			e.count(StoreSessions).Removed++
		case !errors.Is(err, session.ErrNotFound): // deleted meanwhile otherwise
			return fmt.Errorf("erasing session %q: %w", id, err)
		}
		e.r.Pending = ""
	}
	return e.record()
}

// verify asks every store again, and says whether none holds anything of
// the user. Forgetting again where a store cannot be asked removes what it
// finds, which the next round would remove anyway.
func (e *erasure) verify(ctx context.Context) error {
	for i := range e.r.Stores {
		e.r.Stores[i].Left = 0
	}
	if e.svcs.Sessions != nil {
		left, err := session.IDs(ctx, e.svcs.Sessions, e.app, e.user)
		if err != nil {
			return err
		}
		e.count(StoreSessions).Left = len(left)
	}
	stores := e.stores()
	for _, first := range []bool{false, true} {
		for _, s := range stores {
			if s.First != first {
				continue
			}
			c := e.count(s.Name)
			if s.Left != nil {
				n, err := s.Left(ctx)
				if err != nil {
					return err
				}
				c.Left = n
				continue
			}
			n, err := s.Forget(ctx)
			if err != nil {
				return err
			}
			c.Left, c.Removed = n, c.Removed+n
		}
	}
	e.r.Verified = true
	for _, c := range e.r.Stores {
		e.r.Verified = e.r.Verified && c.Left == 0
	}
	return nil
}

func eraseUserState(ctx context.Context, sessions session.Service, appName, userID string) (int, error) {
	st, err := sessions.UserState(ctx, appName, userID)
	if err != nil || len(st) == 0 {
		return 0, err
	}
	delta := map[string]any{}
	for k := range st {
		if !strings.HasPrefix(k, state.KeyPrefixUser) {
			k = state.KeyPrefixUser + k
		}
		delta[k] = nil
	}
	return len(st), sessions.UpdateUserState(ctx, appName, userID, delta)
}

// anySession stands for the session a request about the user's own
// artifacts must name: those are no session's, whichever it names.
const anySession = "erasure"

// userArtifacts names the user's own artifacts (those of no session).
func userArtifacts(ctx context.Context, store artifacts.Service, appName, userID string) ([]string, error) {
	all, err := store.List(ctx, appName, userID, anySession)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range all {
		if strings.HasPrefix(a.Name, artifacts.UserPrefix) {
			names = append(names, a.Name)
		}
	}
	return names, nil
}

func eraseUserArtifacts(ctx context.Context, store artifacts.Service, appName, userID string) (int, error) {
	names, err := userArtifacts(ctx, store, appName, userID)
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		if err := store.Delete(ctx, artifacts.Ref{AppName: appName, UserID: userID, SessionID: anySession, Name: name}); err != nil && !errors.Is(err, artifacts.ErrNotFound) {
			return 0, fmt.Errorf("erasing artifact %q: %w", name, err)
		}
	}
	return len(names), nil
}
