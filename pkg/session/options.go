package session

import (
	"context"
	"fmt"
	"sync"

	"github.com/hectormem/hector/pkg/state"
)

// DefaultMaxEventBytes bounds the stored JSON of one event when no other limit is set.
const DefaultMaxEventBytes = 1 << 20

// Option configures a Service.
type Option func(*limits)

type limits struct {
	maxEventBytes int
	maxValueBytes int
	deleteHooks   *deleteHooks
}

// deleteHooks can grow after the service is made (OnDelete), while deletes run.
type deleteHooks struct {
	mu    sync.RWMutex
	hooks []DeleteHook
}

func (d *deleteHooks) add(h DeleteHook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hooks = append(d.hooks, h)
}

func (d *deleteHooks) list() []DeleteHook {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.hooks
}

// DeleteHook removes what else belongs to a session when it is deleted:
// its artifacts, its search-index entries. It must be idempotent.
type DeleteHook func(ctx context.Context, appName, userID, sessionID string) error

// WithDeleteHook makes Delete cascade to another store. h runs before the
// session is deleted, so that a crash cannot leave what belongs to it
// behind a deleted session (a session whose hook failed is not deleted,
// and Delete can be called again), and once more after, for what was
// added meanwhile. A Delete of a session already gone (ErrNotFound) runs
// it too, so a cleanup cut short can be retried.
func WithDeleteHook(h DeleteHook) Option {
	return func(l *limits) { l.deleteHooks.add(h) }
}

// WithMaxEventBytes bounds the stored size of one event (message, actions and metadata as JSON).
func WithMaxEventBytes(n int) Option { return func(l *limits) { l.maxEventBytes = n } }

// WithMaxValueBytes bounds the JSON size of one state value.
func WithMaxValueBytes(n int) Option { return func(l *limits) { l.maxValueBytes = n } }

func newLimits(opts []Option) limits {
	l := limits{maxEventBytes: DefaultMaxEventBytes, maxValueBytes: state.DefaultMaxValueBytes, deleteHooks: &deleteHooks{}}
	for _, o := range opts {
		o(&l)
	}
	return l
}

// OnDelete adds a delete hook to a service already made, as WithDeleteHook
// does at construction: what derives from sessions (an index) registers
// itself, so nobody has to remember to.
func (l limits) OnDelete(h DeleteHook) { l.deleteHooks.add(h) }

// cascadeDelete deletes a session with del and runs the delete hooks
// before and after (see WithDeleteHook).
func (l limits) cascadeDelete(ctx context.Context, req *DeleteRequest, del func() error) error {
	hooks := func() error {
		for _, h := range l.deleteHooks.list() {
			if err := h(ctx, req.AppName, req.UserID, req.SessionID); err != nil {
				return err
			}
		}
		return nil
	}
	if err := hooks(); err != nil {
		return fmt.Errorf("session %q is not deleted: removing what belongs to it failed (call Delete again to retry): %w", req.SessionID, err)
	}
	if err := del(); err != nil {
		return err
	}
	if err := hooks(); err != nil {
		return fmt.Errorf("session %q is deleted, but removing what was added to it meanwhile failed (call Delete again to retry): %w", req.SessionID, err)
	}
	return nil
}
