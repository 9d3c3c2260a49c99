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
	"time"

	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/userdata"
)

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
	// Finish, when set, runs once nothing is left, before the receipt is
	// recorded done (scrubbing the databases' files of what was deleted):
	// a receipt says done only when the erasure is.
	Finish func(ctx context.Context) error
	// Quiet, when set, waits after Settle for the writes to the user that
	// the hold does not stop: an import begun before it, which would
	// otherwise write on under the erasure.
	Quiet func(ctx context.Context) error
}

// ErrNotVerified: the erasure removed what it found, and found more each
// time it looked again; its receipt stays running, to be resumed.
var ErrNotVerified = errors.New("erase: the user's data was still being written after the erasure's last round; it is resumed until verified")

// User erases one user from svcs. Erasing again finds nothing and removes
// nothing: it is safe to retry.
func User(ctx context.Context, svcs userdata.Services, appName, userID, by string, opts Options) (*Receipt, error) {
	if err := checkIDs(appName, userID); err != nil {
		if opts.Resume == nil { // refused before anything is recorded
			return nil, err
		}
		// A receipt recorded before IDs were checked first: of the
		// stores, only the facts ever took such an ID.
		svcs = userdata.Services{Facts: svcs.Facts, Caches: svcs.Caches}
	}
	e := &erasure{svcs: svcs, app: appName, user: userID, progress: opts.Progress,
		r: &Receipt{AppName: appName, UserID: userID, By: by, State: StateRunning, Started: time.Now().UTC()}}
	if opts.Resume != nil {
		e.r = opts.Resume
		e.r.State, e.r.Resumed = StateRunning, e.r.Resumed+1
	}
	// Every store is in the receipt, sessions first, whatever it holds.
	e.count(userdata.Sessions)
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
	if opts.Quiet != nil {
		if err := opts.Quiet(ctx); err != nil {
			return nil, err
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
		if e.r.Verified {
			break
		}
		if round == maxRounds { // recorded running, with what it found: resumed, never done unverified
			return e.r, ErrNotVerified
		}
	}
	if opts.Finish != nil {
		if err := opts.Finish(ctx); err != nil {
			return nil, err
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
	svcs      userdata.Services
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

func (e *erasure) stores() []userdata.Store { return userdata.Stores(e.svcs, e.app, e.user) }

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
			e.count(userdata.Sessions).Removed++
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
			e.count(userdata.Sessions).Removed++
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
		e.count(userdata.Sessions).Left = len(left)
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
