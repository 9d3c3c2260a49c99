package extract

import (
	"context"
	"sync"

	"github.com/hectormem/hector/pkg/errkind"
)

// ErrErasing: the user is being erased; nothing is extracted for them
// until the erasure ends.
var ErrErasing = errkind.New(errkind.Conflict, "the user is being erased: nothing is learned about them meanwhile")

type userKey struct{ app, user string }

// erasures keeps extraction away from users being erased: a run writes
// facts minutes after it starts (the model's answer), and one that began
// before an erasure must not write after the erasure looked.
type erasures struct {
	mu   sync.Mutex
	cond *sync.Cond
	held map[userKey]int                         // erasures under way
	runs map[userKey]map[*int]context.CancelFunc // runs under way, cancellable
}

// enter registers a run for the user, on a context Hold cancels; leave
// ends it.
func (e *erasures) enter(ctx context.Context, k userKey) (context.Context, func(), error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
	if e.held[k] > 0 {
		return nil, nil, ErrErasing
	}
	ctx, cancel := context.WithCancel(ctx)
	id := new(int)
	if e.runs[k] == nil {
		e.runs[k] = map[*int]context.CancelFunc{}
	}
	e.runs[k][id] = cancel
	return ctx, func() {
		cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.runs[k], id)
		if len(e.runs[k]) == 0 {
			delete(e.runs, k)
		}
		e.cond.Broadcast()
	}, nil
}

// init makes the maps, the first time; e.mu is held.
func (e *erasures) init() {
	if e.runs == nil {
		e.cond, e.held, e.runs = sync.NewCond(&e.mu), map[userKey]int{}, map[userKey]map[*int]context.CancelFunc{}
	}
}

// hold refuses new runs for the user, cancels those under way and waits
// for them to end, until release.
func (e *erasures) hold(k userKey) (release func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
	e.held[k]++
	for _, cancel := range e.runs[k] {
		cancel()
	}
	for len(e.runs[k]) > 0 {
		e.cond.Wait()
	}
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.held[k]--; e.held[k] == 0 {
			delete(e.held, k)
		}
	}
}

// Hold keeps extraction away from a user being erased until release: it
// drops what the worker has noted of their sessions, cancels the runs
// under way for them and waits for them to end, and refuses new ones
// (ErrErasing). Once it returns nothing learned from them is being written.
func (x *Extractor) Hold(app, user string) (release func()) {
	bg := &x.bg
	bg.mu.Lock()
	for k := range bg.pending {
		if k.app == app && k.user == user {
			delete(bg.pending, k)
		}
	}
	bg.mu.Unlock()
	return x.erasures.hold(userKey{app, user})
}
