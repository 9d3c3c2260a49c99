package session

import (
	"iter"
	"sync"
	"time"

	"github.com/hectormem/hector/pkg/state"
)

// handle is the Session both backends hand out. Its state and events are its
// own copies: changing them never reaches the store.
type handle struct {
	id, app, user string
	title         string
	state         *state.Map

	// ref marks a handle made by Ref, whose IDs no service has checked.
	ref bool

	mu      sync.RWMutex
	events  []*Event
	lastSeq int64
	updated time.Time
}

// Ref returns a handle for appending to a session without loading it,
// which saves AppendEvent's caller a Get: a server that appends on behalf
// of clients needs only the session's key. The handle starts with no state
// and no events and holds only what is appended through it; AppendEvent
// on it fails with ErrNotFound when the session does not exist, and with
// ErrInvalidArgument when an ID is malformed.
func Ref(appName, userID, sessionID string) Session {
	return &handle{app: appName, user: userID, id: sessionID, ref: true, state: state.NewMap(nil, 0)}
}

func (h *handle) ID() string         { return h.id }
func (h *handle) AppName() string    { return h.app }
func (h *handle) UserID() string     { return h.user }
func (h *handle) Title() string      { return h.title }
func (h *handle) State() state.State { return h.state }

func (h *handle) Events() Events {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return eventList(h.events[:len(h.events):len(h.events)])
}

func (h *handle) LastUpdateTime() time.Time {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.updated
}

func (h *handle) LastSeq() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.lastSeq
}

// committed records an append that the store has made durable.
func (h *handle) committed(ev *Event, delta state.Delta, updated time.Time) {
	h.state.ApplyDelta(state.Merge(delta.Stored(), delta.Temp))
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	h.lastSeq = ev.Seq
	h.updated = updated
}

type eventList []*Event

func (l eventList) All() iter.Seq[*Event] {
	return func(yield func(*Event) bool) {
		for _, e := range l {
			if !yield(e) {
				return
			}
		}
	}
}
func (l eventList) At(i int) *Event { return l[i] }
func (l eventList) Len() int        { return len(l) }
