package session

import (
	"context"
	"errors"
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

// WithDeleteHook makes Delete cascade to another store: h runs after the
// session is deleted, and again on every later Delete of the same session
// (which returns ErrNotFound), so a cleanup that failed can be retried.
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

// cascadeDelete runs the delete hooks after a Delete that returned err.
func (l limits) cascadeDelete(ctx context.Context, req *DeleteRequest, err error) error {
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	for _, h := range l.deleteHooks.list() {
		if herr := h(ctx, req.AppName, req.UserID, req.SessionID); herr != nil {
			return fmt.Errorf("session %q is deleted, but removing what belongs to it failed (call Delete again to retry): %w", req.SessionID, herr)
		}
	}
	return err
}
