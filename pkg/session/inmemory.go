package session

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/state"
)

// inMemoryService keeps everything in process memory, behind one lock. It
// stores events as the same rows the SQL backend writes, so callers always
// get fresh copies and both backends return identical values.
type inMemoryService struct {
	limits

	mu        sync.RWMutex
	sessions  map[owner]map[string]*memSession // by owner, so List reads one user's sessions only
	appState  map[string]map[string]any
	userState map[owner]map[string]any
	feed      []memChange // in cursor order
	cursor    int64
	lineage   Lineage
}

type owner struct{ app, user string }

type sessionKey struct {
	owner
	id string
}

type memSession struct {
	createdNs, updatedNs int64
	title                string
	state                map[string]any
	events               []eventRow
	// decoded holds events[i] decoded once, at append, so a read copies
	// instead of decoding; a row put in by other means has none (nil).
	decoded  []*Event
	eventIDs map[string]bool
}

type memChange struct {
	cursor  int64
	key     sessionKey
	deleted bool
	row     *eventRow // for appends
}

// NewInMemoryService returns a Service that keeps everything in memory: for
// tests, examples and short-lived agents. Everything is lost on exit.
func NewInMemoryService(opts ...Option) Service {
	return &inMemoryService{
		limits:    newLimits(opts),
		sessions:  make(map[owner]map[string]*memSession),
		appState:  make(map[string]map[string]any),
		userState: make(map[owner]map[string]any),
	}
}

func (m *inMemoryService) Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
	key, d, err := m.checkCreate(req)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session(key) != nil {
		return nil, alreadyExists(key)
	}
	sessionState := make(map[string]any)
	state.Apply(sessionState, d.Session)
	if m.sessions[key.owner] == nil {
		m.sessions[key.owner] = make(map[string]*memSession)
	}
	m.sessions[key.owner][key.id] = &memSession{createdNs: now, updatedNs: now, title: req.Title, state: sessionState, eventIDs: make(map[string]bool)}
	m.applyShared(key.owner, d)
	return &CreateResponse{Session: m.handleLocked(key, nil, d.Temp)}, nil
}

func (m *inMemoryService) Get(ctx context.Context, req *GetRequest) (*GetResponse, error) {
	key, err := checkGet(req)
	if err != nil {
		return nil, err
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.session(key)
	if s == nil {
		return nil, notFound(key)
	}
	var window []int     // indexes of the events asked for
	end := len(s.events) // event i has sequence number i+1
	if req.BeforeSeq > 0 {
		end = min(end, int(req.BeforeSeq-1))
	}
	from := 0
	if n := req.NumRecentEvents; n > 0 && req.After.IsZero() {
		from = max(0, end-n)
	}
	for i := from; i < end; i++ {
		if req.After.IsZero() || s.events[i].TimestampNs > req.After.UnixNano() {
			window = append(window, i)
		}
	}
	if n := req.NumRecentEvents; n > 0 && len(window) > n {
		window = window[len(window)-n:]
	}
	decoded := make([]*Event, len(window))
	for j, i := range window {
		if i < len(s.decoded) && s.decoded[i] != nil {
			decoded[j] = s.decoded[i]
			continue
		}
		var err error
		if decoded[j], err = s.events[i].event(); err != nil {
			return nil, err
		}
	}
	events := copyEvents(decoded)
	return &GetResponse{Session: m.handleLocked(key, events, nil)}, nil
}

func (m *inMemoryService) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	o, size, from, err := checkList(req)
	if err != nil {
		return nil, err
	}

	m.mu.RLock()
	defer m.mu.RUnlock()
	type listed struct {
		id string
		s  *memSession
	}
	ns := func(s *memSession) int64 {
		if req.ByUpdate {
			return s.updatedNs
		}
		return s.createdNs
	}
	var page []listed
	for id, s := range m.sessions[o] {
		if from.before(ns(s), id) {
			page = append(page, listed{id, s})
		}
	}
	slices.SortFunc(page, func(a, b listed) int {
		return cmp.Or(cmp.Compare(ns(b.s), ns(a.s)), cmp.Compare(b.id, a.id))
	})
	resp := &ListResponse{}
	if len(page) > size {
		page = page[:size]
		resp.NextPageToken = listPosition{ns(page[size-1].s), page[size-1].id, req.ByUpdate}.token()
	}
	for _, l := range page {
		resp.Sessions = append(resp.Sessions, m.handleLocked(sessionKey{o, l.id}, nil, nil))
	}
	return resp, nil
}

func (m *inMemoryService) Delete(ctx context.Context, req *DeleteRequest) error {
	key, err := checkDelete(req)
	if err != nil {
		return err
	}
	return m.cascadeDelete(ctx, req, func() error { return m.delete(key) })
}

func (m *inMemoryService) delete(key sessionKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session(key) == nil {
		return notFound(key)
	}
	delete(m.sessions[key.owner], key.id)
	// The deleted events leave the feed, as their rows leave the SQL tables;
	// the tombstone tells readers that already saw them.
	m.feed = slices.DeleteFunc(m.feed, func(c memChange) bool { return c.key == key })
	m.cursor++
	m.feed = append(m.feed, memChange{cursor: m.cursor, key: key, deleted: true})
	return nil
}

func (m *inMemoryService) AppendEvent(ctx context.Context, s Session, ev *Event, opts ...AppendOption) error {
	return m.AppendEvents(ctx, s, []*Event{ev}, opts...)
}

func (m *inMemoryService) AppendEvents(ctx context.Context, s Session, evs []*Event, opts ...AppendOption) error {
	batch, err := m.prepareBatch(s, evs, opts)
	if err != nil || len(batch) == 0 {
		return err
	}
	key, o := batch[0].key, batch[0].opts
	now := time.Now()

	m.mu.Lock()
	defer m.mu.Unlock()
	stored := m.session(key)
	if stored == nil {
		return notFound(key)
	}
	lastSeq := int64(len(stored.events))
	if o.expectSeq != nil && *o.expectSeq != lastSeq {
		return conflict(key, *o.expectSeq, lastSeq)
	}
	rows := make([]eventRow, len(batch))
	decoded := make([]*Event, len(batch))
	cursors := make([]int64, len(batch))
	for i, p := range batch {
		if stored.eventIDs[p.row.EventID] {
			return eventExists(key, p.row.EventID)
		}
		rows[i] = p.row
		rows[i].Seq, rows[i].Cursor = lastSeq+1+int64(i), m.cursor+1+int64(i)
		cursors[i] = rows[i].Cursor
		// Decoded from the row, not taken from ev: the values are then exactly
		// those a SQL backend would hand back (JSON numbers as float64, say).
		if decoded[i], err = rows[i].event(); err != nil {
			return err
		}
	}
	// Checked, every one: now nothing can fail, and all of them are stored.
	m.cursor += int64(len(batch))
	stored.decoded = append(stored.decoded, make([]*Event, len(stored.events)-len(stored.decoded))...)
	for i, p := range batch {
		row := &rows[i]
		stored.events = append(stored.events, *row)
		stored.decoded = append(stored.decoded, decoded[i])
		stored.eventIDs[row.EventID] = true
		state.Apply(stored.state, state.CloneMap(p.delta.Session))
		m.applyShared(key.owner, p.delta)
		m.feed = append(m.feed, memChange{cursor: row.Cursor, key: key, row: row})
	}
	stored.updatedNs = now.UnixNano()
	return finishBatch(batch, evs, lastSeq+1, cursors, now)
}

func (m *inMemoryService) SetTitle(ctx context.Context, req *SetTitleRequest) error {
	key, err := checkSetTitle(req)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.session(key)
	if s == nil {
		return notFound(key)
	}
	s.title = req.Title
	return nil
}

func (m *inMemoryService) AppState(ctx context.Context, appName string) (map[string]any, error) {
	if err := ident.Check("app name", appName); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return nonNil(state.CloneMap(m.appState[appName])), nil
}

func (m *inMemoryService) UserState(ctx context.Context, appName, userID string) (map[string]any, error) {
	if err := validateOwner(appName, userID); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return nonNil(state.CloneMap(m.userState[owner{appName, userID}])), nil
}

func (m *inMemoryService) UpdateAppState(ctx context.Context, appName string, delta map[string]any) error {
	if err := ident.Check("app name", appName); err != nil {
		return err
	}
	d, err := splitScopedDelta(delta, state.ScopeApp, m.maxValueBytes)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyShared(owner{app: appName}, state.Delta{App: d})
	return nil
}

func (m *inMemoryService) UpdateUserState(ctx context.Context, appName, userID string, delta map[string]any) error {
	if err := validateOwner(appName, userID); err != nil {
		return err
	}
	d, err := splitScopedDelta(delta, state.ScopeUser, m.maxValueBytes)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applyShared(owner{appName, userID}, state.Delta{User: d})
	return nil
}

func (m *inMemoryService) Changes(ctx context.Context, req *ChangesRequest) (*ChangesResponse, error) {
	limit, err := changesLimit(req)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, _ := slices.BinarySearchFunc(m.feed, req.After+1, func(c memChange, cursor int64) int {
		return cmp.Compare(c.cursor, cursor)
	})
	resp := &ChangesResponse{Cursor: req.After, Head: m.cursor}
	for _, c := range m.feed[i:min(i+limit, len(m.feed))] {
		change := Change{Cursor: c.cursor, Kind: ChangeSessionDeleted, AppName: c.key.app, UserID: c.key.user, SessionID: c.key.id}
		if !c.deleted {
			change.Kind = ChangeEventAppended
			if change.Event, err = c.row.event(); err != nil {
				return nil, err
			}
		}
		resp.Changes = append(resp.Changes, change)
		resp.Cursor = c.cursor
	}
	return resp, nil
}

// session returns the stored session, or nil. Callers hold m.mu.
func (m *inMemoryService) session(key sessionKey) *memSession {
	return m.sessions[key.owner][key.id]
}

// applyShared writes the app: and user: parts of a delta. Callers hold m.mu.
func (m *inMemoryService) applyShared(o owner, d state.Delta) {
	apply := func(dst map[string]any, delta map[string]any) map[string]any {
		if dst == nil {
			dst = make(map[string]any)
		}
		state.Apply(dst, state.CloneMap(delta))
		return dst
	}
	if len(d.App) > 0 {
		m.appState[o.app] = apply(m.appState[o.app], d.App)
	}
	if len(d.User) > 0 {
		m.userState[o] = apply(m.userState[o], d.User)
	}
}

// handleLocked builds a handle on a stored session. Callers hold m.mu.
func (m *inMemoryService) handleLocked(key sessionKey, events []*Event, temp map[string]any) *handle {
	s := m.session(key)
	merged := state.Merge(m.appState[key.app], m.userState[key.owner], s.state, temp)
	return &handle{
		id: key.id, app: key.app, user: key.user, title: s.title,
		state:   state.NewMap(merged, m.maxValueBytes),
		events:  events,
		lastSeq: int64(len(s.events)),
		updated: time.Unix(0, s.updatedNs).UTC(),
	}
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
