package hectoradk

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"sync"
	"time"

	adksession "google.golang.org/adk/v2/session"
)

// sessionService is ADK's session.Service on Hector's sessions.
type sessionService struct{ b backend }

func (s sessionService) Create(ctx context.Context, req *adksession.CreateRequest) (*adksession.CreateResponse, error) {
	if req == nil {
		return nil, errors.New("hectoradk: the create request is nil")
	}
	st, err := s.b.createSession(ctx, req.AppName, req.UserID, req.SessionID, req.State)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: creating session %q: %w", req.SessionID, err)
	}
	sess, err := s.open(st)
	if err != nil {
		return nil, err
	}
	return &adksession.CreateResponse{Session: sess}, nil
}

func (s sessionService) Get(ctx context.Context, req *adksession.GetRequest) (*adksession.GetResponse, error) {
	if req == nil {
		return nil, errors.New("hectoradk: the get request is nil")
	}
	st, err := s.b.getSession(ctx, req.AppName, req.UserID, req.SessionID, req.NumRecentEvents, req.After)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: reading session %q: %w", req.SessionID, err)
	}
	sess, err := s.open(st)
	if err != nil {
		return nil, err
	}
	return &adksession.GetResponse{Session: sess}, nil
}

// List lists a user's sessions, or with no user every user's of the app
// (which over HTTP takes an admin or app key); without their events.
func (s sessionService) List(ctx context.Context, req *adksession.ListRequest) (*adksession.ListResponse, error) {
	if req == nil {
		return nil, errors.New("hectoradk: the list request is nil")
	}
	all, err := s.b.listSessions(ctx, req.AppName, req.UserID)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: listing sessions: %w", err)
	}
	out := &adksession.ListResponse{Sessions: make([]adksession.Session, 0, len(all))}
	for _, st := range all {
		sess, err := s.open(st)
		if err != nil {
			return nil, err
		}
		out.Sessions = append(out.Sessions, sess)
	}
	return out, nil
}

// Delete deletes a session with its events, state, artifacts and index
// entries; one that does not exist (or is another user's) is left alone.
func (s sessionService) Delete(ctx context.Context, req *adksession.DeleteRequest) error {
	if req == nil {
		return errors.New("hectoradk: the delete request is nil")
	}
	if err := s.b.deleteSession(ctx, req.AppName, req.UserID, req.SessionID); err != nil {
		return fmt.Errorf("hectoradk: deleting session %q: %w", req.SessionID, err)
	}
	return nil
}

// AppendEvent stores ev and applies its state delta in one transaction.
// Partial events are not stored. temp: keys reach cur's state but are not
// stored. An event without a time is given the present, to the
// microsecond every database keeps; ev's ID and Timestamp are then as
// stored, and cur (when this service made it) has the event.
func (s sessionService) AppendEvent(ctx context.Context, cur adksession.Session, ev *adksession.Event) error {
	if cur == nil || ev == nil {
		return errors.New("hectoradk: AppendEvent needs a session and an event")
	}
	if ev.Partial {
		return nil
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = time.Now().UTC()
	}
	ev.Timestamp = ev.Timestamp.Truncate(time.Microsecond)
	kept := withoutTemp(ev)
	h, err := toHector(kept)
	if err != nil {
		return err
	}
	if err := s.b.appendEvent(ctx, cur.AppName(), cur.UserID(), cur.ID(), h); err != nil {
		return fmt.Errorf("hectoradk: appending to session %q: %w", cur.ID(), err)
	}
	ev.ID = h.ID
	if kept != ev {
		kept.ID = h.ID
	}
	if sess, ok := cur.(*hectorSession); ok {
		sess.appended(ev, kept)
	}
	return nil
}

// open is a stored session as ADK sees it.
func (s sessionService) open(st *stored) (*hectorSession, error) {
	sess := &hectorSession{from: s.b, app: st.AppName, user: st.UserID, id: st.ID, state: st.State, updated: st.LastUpdateTime}
	if sess.state == nil {
		sess.state = map[string]any{}
	}
	for _, h := range st.Events {
		e, err := fromHector(h)
		if err != nil {
			return nil, err
		}
		sess.events = append(sess.events, e)
	}
	return sess, nil
}

// hectorSession is a session as it was read, kept up to date by the
// appends made through it.
type hectorSession struct {
	from          backend // the Hector it was read from
	app, user, id string
	mu            sync.RWMutex
	state         map[string]any
	events        events
	updated       time.Time
}

func (s *hectorSession) ID() string      { return s.id }
func (s *hectorSession) AppName() string { return s.app }
func (s *hectorSession) UserID() string  { return s.user }

func (s *hectorSession) State() adksession.State { return sessionState{s} }

func (s *hectorSession) Events() adksession.Events {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.events
}

func (s *hectorSession) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updated
}

// appended brings the session up to date with ev, stored as kept: the
// state takes every key of the delta, temp: ones too, as ADK's do.
func (s *hectorSession) appended(ev, kept *adksession.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.state, ev.Actions.StateDelta)
	s.events = append(s.events, kept)
	s.updated = ev.Timestamp
}

type events []*adksession.Event

func (e events) All() iter.Seq[*adksession.Event] {
	return func(yield func(*adksession.Event) bool) {
		for _, ev := range e {
			if !yield(ev) {
				return
			}
		}
	}
}

func (e events) Len() int { return len(e) }

func (e events) At(i int) *adksession.Event {
	if i < 0 || i >= len(e) {
		return nil
	}
	return e[i]
}

// sessionState is a session's merged state (app:, user:, its own and
// temp: keys). Set changes this handle only: a stored change is an
// event's state delta.
type sessionState struct{ s *hectorSession }

func (st sessionState) Get(key string) (any, error) {
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	v, ok := st.s.state[key]
	if !ok {
		return nil, adksession.ErrStateKeyNotExist
	}
	return v, nil
}

func (st sessionState) Set(key string, v any) error {
	st.s.mu.Lock()
	defer st.s.mu.Unlock()
	st.s.state[key] = v
	return nil
}

func (st sessionState) All() iter.Seq2[string, any] {
	st.s.mu.RLock()
	copied := maps.Clone(st.s.state)
	st.s.mu.RUnlock()
	return maps.All(copied)
}
