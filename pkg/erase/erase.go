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
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

// Index is what erasure needs of the search index: to remove every
// document of a user, of whichever session, saying how many it found
// (index.Index.Forget).
type Index interface {
	Forget(ctx context.Context, appName, userID string) (int, error)
}

// Services are the stores a user is erased from; all but Sessions may be nil.
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
}

// User erases one user from svcs. Erasing again finds nothing and removes
// nothing: it is safe to retry.
func User(ctx context.Context, svcs Services, appName, userID, by string, opts Options) (*Receipt, error) {
	if appName == "" || userID == "" {
		return nil, fmt.Errorf("%w: erasing a user needs the app and the user", session.ErrInvalidArgument)
	}
	r := &Receipt{AppName: appName, UserID: userID, By: by, State: StateRunning, Started: time.Now().UTC()}
	if opts.Resume != nil {
		r = opts.Resume
		r.State, r.Resumed = StateRunning, r.Resumed+1
	}
	progress := func() error {
		if opts.Progress == nil {
			return nil
		}
		return opts.Progress(r)
	}
	if err := progress(); err != nil {
		return nil, err
	}
	count := func(store string) *Count {
		for i := range r.Stores {
			if r.Stores[i].Store == store {
				return &r.Stores[i]
			}
		}
		r.Stores = append(r.Stores, Count{Store: store})
		return &r.Stores[len(r.Stores)-1]
	}

	// Every document of theirs in the index, whichever session it came
	// from (one of a session deleted long ago that a missed tombstone left
	// behind, say), counted before deleting their sessions clears them.
	count(StoreSessions) // first in the receipt
	if svcs.Index != nil {
		n, err := svcs.Index.Forget(ctx, appName, userID)
		if err != nil {
			return nil, err
		}
		count(StoreIndex).Removed += n
		if err := progress(); err != nil {
			return nil, err
		}
	}

	// Sessions, and through their delete hooks what belongs to each.
	ids, err := session.IDs(ctx, svcs.Sessions, appName, userID)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := svcs.Sessions.Delete(ctx, &session.DeleteRequest{AppName: appName, UserID: userID, SessionID: id}); errors.Is(err, session.ErrNotFound) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, fmt.Errorf("erasing session %q: %w", id, err)
		}
		count(StoreSessions).Removed++
		if err := progress(); err != nil {
			return nil, err
		}
	}
	// The change feed's tombstones name the deleted sessions, for the
	// index, which has forgotten them above.
	feed, hasFeed := svcs.Sessions.(session.TombstoneEraser)
	if hasFeed {
		n, err := feed.EraseTombstones(ctx, appName, userID)
		if err != nil {
			return nil, fmt.Errorf("erasing the change feed's tombstones: %w", err)
		}
		count(StoreFeed).Removed += n
	}

	// The user's own state, artifacts and facts.
	n, err := eraseUserState(ctx, svcs.Sessions, appName, userID)
	if err != nil {
		return nil, err
	}
	count(StoreUserState).Removed += n
	if svcs.Artifacts != nil {
		if n, err = eraseUserArtifacts(ctx, svcs.Artifacts, appName, userID); err != nil {
			return nil, err
		}
		count(StoreArtifacts).Removed += n
	}
	if svcs.Facts != nil {
		if n, err = svcs.Facts.ForgetUser(ctx, appName, userID); err != nil {
			return nil, err
		}
		count(StoreFacts).Removed += n
	}
	for _, c := range svcs.Caches {
		count(c.Name()).Removed += c.ForgetUser(appName, userID)
	}
	if err := progress(); err != nil {
		return nil, err
	}

	// The verification pass: every store asked again.
	for i := range r.Stores {
		r.Stores[i].Left = 0
	}
	left, err := session.IDs(ctx, svcs.Sessions, appName, userID)
	if err != nil {
		return nil, err
	}
	count(StoreSessions).Left = len(left)
	if hasFeed {
		if count(StoreFeed).Left, err = feed.EraseTombstones(ctx, appName, userID); err != nil {
			return nil, err
		}
	}
	st, err := svcs.Sessions.UserState(ctx, appName, userID)
	if err != nil {
		return nil, err
	}
	count(StoreUserState).Left = len(st)
	if svcs.Artifacts != nil {
		names, err := userArtifacts(ctx, svcs.Artifacts, appName, userID)
		if err != nil {
			return nil, err
		}
		count(StoreArtifacts).Left = len(names)
	}
	if svcs.Facts != nil {
		// Forgetting again removes what is found: what a write left meanwhile.
		if count(StoreFacts).Left, err = svcs.Facts.ForgetUser(ctx, appName, userID); err != nil {
			return nil, err
		}
	}
	for _, c := range svcs.Caches {
		count(c.Name()).Left = c.ForgetUser(appName, userID)
	}
	if svcs.Index != nil {
		// Forgetting again removes what is found: what the follower wrote
		// from the feed meanwhile.
		if count(StoreIndex).Left, err = svcs.Index.Forget(ctx, appName, userID); err != nil {
			return nil, err
		}
	}
	r.Verified = true
	for _, c := range r.Stores {
		r.Verified = r.Verified && c.Left == 0
	}
	r.State, r.Finished = StateDone, time.Now().UTC()
	return r, progress()
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
