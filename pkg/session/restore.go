package session

import (
	"context"
	"time"

	"github.com/hectormem/hector/pkg/state"
)

// Restorer is a Service that can write back a session as an export of it
// recorded it (moving a user between deployments). Both backends and
// Cached are Restorers.
type Restorer interface {
	// Restore creates the session with its state and events in one
	// transaction. The events keep their IDs and timestamps and are
	// numbered 1, 2, … in the order given; their state deltas are kept in
	// them but not applied again, since State is what they made. Every
	// event enters the change feed, so the index learns of them. It fails
	// with ErrAlreadyExists, writing nothing, if the session exists.
	Restore(ctx context.Context, req *RestoreRequest) (Session, error)
}

// RestoreRequest is a session as an export recorded it. State holds the
// session's own keys only (app: and user: keys are restored apart, temp:
// keys are never stored). A zero LastUpdateTime is the restore's time.
type RestoreRequest struct {
	AppName, UserID, SessionID string
	Title                      string
	State                      map[string]any
	Events                     []*Event
	LastUpdateTime             time.Time
}

// checkRestore validates a restore without touching the store.
func (l limits) checkRestore(req *RestoreRequest) (sessionKey, map[string]any, []*pendingAppend, int64, error) {
	if req == nil {
		return sessionKey{}, nil, nil, 0, invalid("restore request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return sessionKey{}, nil, nil, 0, err
	}
	if err := checkTitle(req.Title); err != nil {
		return sessionKey{}, nil, nil, 0, err
	}
	key := sessionKey{owner{req.AppName, req.UserID}, req.SessionID}
	d, err := splitDelta(req.State, l.maxValueBytes)
	if err != nil {
		return key, nil, nil, 0, err
	}
	if len(d.Session) != len(req.State) {
		for k := range req.State {
			if _, ok := d.Session[k]; !ok {
				return key, nil, nil, 0, invalid("state key %q is not a session key: a restored session's state holds its own keys only", k)
			}
		}
	}
	batch, err := l.prepareBatch(Ref(req.AppName, req.UserID, req.SessionID), req.Events, nil)
	if err != nil {
		return key, nil, nil, 0, err
	}
	updated := req.LastUpdateTime
	if updated.IsZero() {
		updated = time.Now()
	}
	return key, d.Session, batch, updated.UnixNano(), nil
}

func (s *SQLService) Restore(ctx context.Context, req *RestoreRequest) (Session, error) {
	key, sessionState, batch, updatedNs, err := s.checkRestore(req)
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, func(w *sqlTx) error {
		times := eventTimes{inOrder: true, latest: noEventNs}
		if len(batch) > 0 {
			times = timesOf(batch)
		}
		insert := "INSERT INTO sessions (app_name, user_id, id, created_ns, updated_ns, last_seq, title, last_event_ns, events_in_order) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
		if w.dialect != "mysql" {
			insert += " ON CONFLICT DO NOTHING"
		}
		n, err := w.exec(insert, key.app, key.user, key.id, time.Now().UnixNano(), updatedNs, len(batch), req.Title, times.latest, times.inOrder)
		if s.isDuplicateKey(err) {
			n, err = 0, nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return alreadyExists(key)
		}
		if err := writeState(w, key, state.Delta{Session: sessionState}); err != nil {
			return err
		}
		for i, p := range batch {
			r := p.row
			if _, err := insertWithCursor(w, "events (feed_cursor, app_name, user_id, session_id, seq, event_id, timestamp_ns, payload)",
				r.AppName, r.UserID, r.SessionID, int64(i+1), r.EventID, r.TimestampNs, r.Payload); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	got, err := s.Get(ctx, &GetRequest{AppName: key.app, UserID: key.user, SessionID: key.id})
	if err != nil {
		return nil, err
	}
	return got.Session, nil
}

func (m *inMemoryService) Restore(ctx context.Context, req *RestoreRequest) (Session, error) {
	key, sessionState, batch, updatedNs, err := m.checkRestore(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.session(key) != nil {
		m.mu.Unlock()
		return nil, alreadyExists(key)
	}
	stored := &memSession{createdNs: time.Now().UnixNano(), updatedNs: updatedNs, title: req.Title, state: map[string]any{}, eventIDs: make(map[string]bool)}
	state.Apply(stored.state, state.CloneMap(sessionState))
	rows := make([]eventRow, len(batch))
	for i, p := range batch {
		m.cursor++
		rows[i] = p.row
		rows[i].Seq, rows[i].Cursor = int64(i+1), m.cursor
		stored.events = append(stored.events, rows[i])
		stored.eventIDs[rows[i].EventID] = true
		m.feed = append(m.feed, memChange{cursor: m.cursor, key: key, row: &rows[i]})
	}
	if m.sessions[key.owner] == nil {
		m.sessions[key.owner] = make(map[string]*memSession)
	}
	m.sessions[key.owner][key.id] = stored
	m.mu.Unlock()
	got, err := m.Get(ctx, &GetRequest{AppName: key.app, UserID: key.user, SessionID: key.id})
	if err != nil {
		return nil, err
	}
	return got.Session, nil
}

// Restore restores through the backend, which must be a Restorer.
func (c *Cached) Restore(ctx context.Context, req *RestoreRequest) (Session, error) {
	r, ok := c.Service.(Restorer)
	if !ok {
		return nil, invalid("this session store cannot restore sessions")
	}
	return r.Restore(ctx, req)
}
