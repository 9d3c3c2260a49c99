package session

import (
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/uuid"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/state"
)

// eventRow is an event as both backends store it: the fields queries filter
// on or need unique as columns, the rest as one JSON payload. The in-memory
// backend keeps the same rows so that it returns exactly what the SQL
// backend returns.
//
// Every column costs a Get: reading one through go-sqlite3 is two or three
// cgo calls and an allocation or two per row. Invocation ID, author and
// branch, which no query filters on, moved into the payload: that made
// reading 100 events a fifth cheaper (see movePayloadColumns for databases
// that had them as columns).
//
// Each index is a page every append writes: the sequence numbers (recent
// events, paging back) and the event IDs (duplicates). Times have none (see
// sessionRow.EventsInOrder).
type eventRow struct {
	// The store-wide cursor is the primary key: in SQLite it is the rowid, so
	// the feed needs no index of its own.
	Cursor      int64    `gorm:"column:feed_cursor;primaryKey;autoIncrement:false"`
	AppName     string   `gorm:"size:128;not null;uniqueIndex:events_seq,priority:1;uniqueIndex:events_event_id,priority:1"`
	UserID      string   `gorm:"size:128;not null;uniqueIndex:events_seq,priority:2;uniqueIndex:events_event_id,priority:2"`
	SessionID   string   `gorm:"size:128;not null;uniqueIndex:events_seq,priority:3;uniqueIndex:events_event_id,priority:3"`
	Seq         int64    `gorm:"not null;uniqueIndex:events_seq,priority:4"`
	EventID     string   `gorm:"size:128;not null;uniqueIndex:events_event_id,priority:4"`
	TimestampNs int64    `gorm:"not null"`
	Payload     longText `gorm:"not null"`
}

func (eventRow) TableName() string { return "events" }

// eventPayload is the JSON part of a stored event.
type eventPayload struct {
	InvocationID string         `json:"invocation_id,omitempty"`
	Author       string         `json:"author,omitempty"`
	Branch       string         `json:"branch,omitempty"`
	Message      *Message       `json:"message,omitempty"`
	Actions      Actions        `json:"actions"`
	Metadata     map[string]any `json:"metadata,omitempty"`
}

// pendingAppend is a validated append, ready to be written; the store fills
// in Seq and Cursor.
type pendingAppend struct {
	h     *handle
	key   sessionKey
	opts  appendOptions
	delta state.Delta
	row   eventRow
	msg   *Message // the event's message, its role in Hector's words
}

// prepareAppend validates an append without touching the store, so bad input
// is refused before any write. A partial event, which is never stored,
// gives nil and no error.
func (l limits) prepareAppend(s Session, ev *Event, opts []AppendOption) (*pendingAppend, error) {
	if ev != nil && ev.Partial {
		return nil, nil
	}
	h, ok := s.(*handle)
	if !ok || h == nil {
		return nil, invalid("the session was not returned by a session.Service")
	}
	if ev == nil {
		return nil, invalid("event is nil")
	}
	if h.ref {
		if err := validateSessionKey(h.app, h.user, h.id); err != nil {
			return nil, err
		}
	}
	id := ev.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	if err := ident.Check("event ID", id); err != nil {
		return nil, err
	}
	if ev.Author != "" { // optional; when given, it names someone as IDs do
		if err := ident.Check("author", ev.Author); err != nil {
			return nil, err
		}
	}
	ts := ev.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	if !time.Unix(0, ts.UnixNano()).Equal(ts) {
		return nil, invalid("event timestamp %s is outside the years 1678 to 2262", ts)
	}
	msg, err := normalizeMessage(ev.Message)
	if err != nil {
		return nil, err
	}
	delta, err := splitDelta(ev.Actions.StateDelta, l.maxValueBytes)
	if err != nil {
		return nil, err
	}
	actions := ev.Actions
	actions.StateDelta = delta.Stored() // temp: keys are never stored
	if len(actions.StateDelta) == 0 {
		actions.StateDelta = nil
	}
	payload, err := json.Marshal(eventPayload{InvocationID: ev.InvocationID, Author: ev.Author, Branch: ev.Branch,
		Message: msg, Actions: actions, Metadata: ev.Metadata})
	if err != nil {
		return nil, invalid("event %q cannot be stored as JSON: %v", id, err)
	}
	if len(payload) > l.maxEventBytes {
		return nil, invalid("event %q is %d bytes, over the limit of %d", id, len(payload), l.maxEventBytes)
	}
	p := &pendingAppend{h: h, key: sessionKey{owner{h.app, h.user}, h.id}, delta: delta, msg: msg, row: eventRow{
		AppName: h.app, UserID: h.user, SessionID: h.id,
		EventID: id, TimestampNs: ts.UnixNano(), Payload: longText(payload),
	}}
	for _, opt := range opts {
		opt(&p.opts)
	}
	return p, nil
}

// prepareBatch validates the events of one AppendEvents: every one before
// any is written, as prepareAppend does each. Partial events are left out;
// two events with one ID are refused. The options apply to the batch: an
// expected sequence number is the session's before its first event.
func (l limits) prepareBatch(s Session, evs []*Event, opts []AppendOption) ([]*pendingAppend, error) {
	if len(evs) == 1 { // AppendEvent: nothing to number or compare
		p, err := l.prepareAppend(s, evs[0], opts)
		if err != nil || p == nil {
			return nil, err
		}
		return []*pendingAppend{p}, nil
	}
	var batch []*pendingAppend
	ids := make(map[string]int, len(evs))
	for i, ev := range evs {
		p, err := l.prepareAppend(s, ev, opts)
		if err != nil {
			return nil, fmt.Errorf("event %d of %d: %w", i+1, len(evs), err)
		}
		if p == nil {
			continue
		}
		if j, dup := ids[p.row.EventID]; dup {
			return nil, invalid("events %d and %d of %d have one ID, %q", j+1, i+1, len(evs), p.row.EventID)
		}
		ids[p.row.EventID] = i
		batch = append(batch, p)
	}
	return batch, nil
}

// finishBatch finishes each append of a batch in order, the events that
// went into it without its partial ones, once the store has committed them
// with consecutive sequence numbers from first and the given cursors.
func finishBatch(batch []*pendingAppend, evs []*Event, first int64, cursors []int64, updated time.Time) error {
	i := 0
	for _, ev := range evs {
		if ev.Partial {
			continue
		}
		if err := batch[i].finish(ev, first+int64(i), cursors[i], updated); err != nil {
			return err
		}
		i++
	}
	return nil
}

// finish updates the handle and the caller's event once the store has
// committed the append with the given sequence number and cursor.
func (p *pendingAppend) finish(ev *Event, seq, cursor int64, updated time.Time) error {
	p.row.Seq, p.row.Cursor = seq, cursor
	stored, err := p.row.event()
	if err != nil {
		return err
	}
	ev.ID, ev.Timestamp, ev.Seq, ev.Cursor, ev.Message = stored.ID, stored.Timestamp, seq, cursor, p.msg
	p.h.committed(stored, p.delta, updated)
	return nil
}

// event decodes a stored row into a new Event.
//
// Decoding is most of the CPU a Get spends, and go-json-experiment/json
// (what encoding/json/v2 is made from, by the Go team) decodes Hector's
// payloads in half the time of encoding/json with half the allocations
// (bench/jsoncmp measures it against the other candidates). Payloads are
// written by encoding/json, whose output it reads as encoding/json would:
// valid UTF-8, no duplicate names, field names as tagged.
func (r *eventRow) event() (*Event, error) {
	ev := new(Event)
	if err := r.decodeInto(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// decodeInto decodes r into ev, which must be zero: a payload is decoded
// straight into the event, as eventPayload's members are Event's by the
// same names (FuzzPayloadDecode holds them to it).
func (r *eventRow) decodeInto(ev *Event) error {
	if err := jsonv2.Unmarshal([]byte(r.Payload), ev); err != nil {
		return fmt.Errorf("session: decoding stored event %q of session %q: %w", r.EventID, r.SessionID, err)
	}
	ev.ID, ev.Timestamp, ev.Seq, ev.Cursor = r.EventID, time.Unix(0, r.TimestampNs).UTC(), r.Seq, r.Cursor
	return nil
}

// eventsFromRows decodes rows into events allocated together.
func eventsFromRows(rows []eventRow) ([]*Event, error) {
	all := make([]Event, len(rows))
	events := make([]*Event, len(rows))
	for i := range rows {
		if err := rows[i].decodeInto(&all[i]); err != nil {
			return nil, err
		}
		events[i] = &all[i]
	}
	return events, nil
}

func newSessionID() string { return uuid.Must(uuid.NewV7()).String() }
