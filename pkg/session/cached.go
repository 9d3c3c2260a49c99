package session

import (
	"container/list"
	"context"
	"maps"
	"sync"

	"github.com/hectormem/hector/pkg/state"
)

// maxCachedEvents bounds what one cached session holds: its newest events.
const maxCachedEvents = 1000

// Cached is a Service that keeps the events of recently read sessions in
// memory, in front of any backend. Decoding a session's stored events is
// most of what a Get costs; a cached Get reads only the session's state and
// its last event, and serves the rest from memory.
//
// Freshness: every Get asks the backend for the session's last event, and
// uses the cached events only when the backend's last event is the one the
// cache ends with. An append through another process or replica, a delete,
// or a delete and re-create are therefore seen by the next Get: the cache
// never serves a stale session (the window is zero, whatever the change
// feed's lag). State is always read from the backend, never cached.
type Cached struct {
	Service
	size int

	mu      sync.Mutex
	entries map[sessionKey]*list.Element
	lru     *list.List // of *cacheEntry, most recently used first
}

type cacheEntry struct {
	key sessionKey
	// events is a suffix of the session's events, in order; complete when
	// it starts at the session's first event.
	events   []*Event
	complete bool
}

func (e *cacheEntry) last() *Event {
	if len(e.events) == 0 {
		return nil
	}
	return e.events[len(e.events)-1]
}

var _ Service = (*Cached)(nil)

// NewCached returns backend with a cache of the size most recently used
// sessions' events.
func NewCached(backend Service, size int) *Cached {
	return &Cached{Service: backend, size: max(size, 1), entries: map[sessionKey]*list.Element{}, lru: list.New()}
}

func (c *Cached) Get(ctx context.Context, req *GetRequest) (*GetResponse, error) {
	key, err := checkGet(req)
	if err != nil {
		return nil, err
	}
	if req.BeforeSeq > 0 { // a page back: the cache keeps the newest events
		return c.Service.Get(ctx, req)
	}
	if _, ok := c.serve(key, req, nil); ok {
		// The session's state and last event, fresh: the cache serves the
		// rest only if that last event is the one it ends with.
		probe, err := c.Service.Get(ctx, &GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: req.SessionID, NumRecentEvents: 1})
		if err != nil {
			c.forget(key)
			return nil, err
		}
		h := probe.Session.(*handle)
		if events, ok := c.serve(key, req, h); ok {
			h.events = events
			return probe, nil
		}
	}
	resp, err := c.Service.Get(ctx, req)
	if err != nil {
		c.forget(key)
		return nil, err
	}
	c.store(key, resp.Session.(*handle), req)
	return resp, nil
}

// serve returns copies of the cached events req asks for, if the cache
// holds all of them and, when now is given (the session's state and last
// event, just read), ends where the session does now. With now nil it only
// says whether it could.
func (c *Cached) serve(key sessionKey, req *GetRequest, now *handle) ([]*Event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if now != nil && !e.endsAt(now) {
		return nil, false
	}
	var window []*Event
	switch {
	case !req.After.IsZero():
		if !e.complete { // the events after a time may start before the cached suffix
			return nil, false
		}
		for _, ev := range e.events {
			if ev.Timestamp.After(req.After) {
				window = append(window, ev)
			}
		}
		if n := req.NumRecentEvents; n > 0 && n < len(window) {
			window = window[len(window)-n:]
		}
	case req.NumRecentEvents > 0 && req.NumRecentEvents <= len(e.events):
		window = e.events[len(e.events)-req.NumRecentEvents:]
	case e.complete:
		window = e.events
	default:
		return nil, false
	}
	if now == nil {
		return nil, true
	}
	c.lru.MoveToFront(el)
	return copyEvents(window), true
}

// endsAt reports whether the entry ends where the session does, as h (its
// state and last event, just read) says.
func (e *cacheEntry) endsAt(h *handle) bool {
	last := e.last()
	if last == nil {
		return len(h.events) == 0 && h.lastSeq == 0
	}
	return len(h.events) == 1 && h.events[0].Seq == last.Seq && h.events[0].ID == last.ID && h.lastSeq == last.Seq
}

// store caches what a Get read, when it adds to what the cache holds.
func (c *Cached) store(key sessionKey, h *handle, req *GetRequest) {
	complete := req.NumRecentEvents == 0 && req.After.IsZero()
	if !complete && req.NumRecentEvents == 0 {
		return // a time window is neither a suffix nor the whole session
	}
	events := h.events
	if len(events) > 0 && events[0].Seq == 1 {
		complete = true
	}
	if len(events) > maxCachedEvents {
		events, complete = events[len(events)-maxCachedEvents:], false
	}
	copies := make([]*Event, len(events))
	for i, ev := range events {
		copies[i] = copyEvent(ev)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		old := el.Value.(*cacheEntry)
		if last := old.last(); last != nil && last.Seq == h.lastSeq && len(old.events) >= len(copies) && (old.complete || !complete) {
			c.lru.MoveToFront(el)
			return // the cache already holds at least as much
		}
		el.Value = &cacheEntry{key: key, events: copies, complete: complete}
		c.lru.MoveToFront(el)
		return
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, events: copies, complete: complete})
	for c.lru.Len() > c.size {
		oldest := c.lru.Back()
		delete(c.entries, oldest.Value.(*cacheEntry).key)
		c.lru.Remove(oldest)
	}
}

// Name names the cache in an erasure's receipt.
func (c *Cached) Name() string { return "session_cache" }

// ForgetUser drops every cached session of one user and says how many it
// dropped: erasing a person (deleting their sessions drops them too).
func (c *Cached) ForgetUser(app, user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, el := range c.entries {
		if key.owner == (owner{app, user}) {
			delete(c.entries, key)
			c.lru.Remove(el)
			n++
		}
	}
	return n
}

func (c *Cached) forget(key sessionKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		delete(c.entries, key)
		c.lru.Remove(el)
	}
}

// AppendEvent appends through the backend and, once it has committed,
// extends the cached events of the session.
func (c *Cached) AppendEvent(ctx context.Context, s Session, ev *Event, opts ...AppendOption) error {
	return c.AppendEvents(ctx, s, []*Event{ev}, opts...)
}

// AppendEvents appends through the backend and, once it has committed,
// extends the cached events of the session.
func (c *Cached) AppendEvents(ctx context.Context, s Session, evs []*Event, opts ...AppendOption) error {
	if err := c.Service.AppendEvents(ctx, s, evs, opts...); err != nil {
		return err
	}
	for _, ev := range evs {
		if ev != nil && !ev.Partial {
			c.extend(s, ev)
		}
	}
	return nil
}

// extend appends a committed event to its session's cached events.
func (c *Cached) extend(s Session, ev *Event) {
	h, ok := s.(*handle)
	if !ok {
		return
	}
	key := sessionKey{owner{h.app, h.user}, h.id}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return
	}
	e := el.Value.(*cacheEntry)
	if last := e.last(); (last == nil && ev.Seq != 1) || (last != nil && last.Seq != ev.Seq-1) {
		// Another writer appended in between: the next Get reads afresh.
		delete(c.entries, key)
		c.lru.Remove(el)
		return
	}
	e.events = append(e.events, copyEvent(ev))
	if len(e.events) > maxCachedEvents {
		e.events, e.complete = e.events[len(e.events)-maxCachedEvents:], false
	}
}

func (c *Cached) Delete(ctx context.Context, req *DeleteRequest) error {
	err := c.Service.Delete(ctx, req)
	if req != nil {
		c.forget(sessionKey{owner{req.AppName, req.UserID}, req.SessionID})
	}
	return err
}

// ListOwners lists the backend's owners, when it can.
func (c *Cached) ListOwners(ctx context.Context, req *OwnersRequest) (*OwnersResponse, error) {
	lister, ok := c.Service.(OwnerLister)
	if !ok {
		return nil, invalid("this session backend cannot list its owners")
	}
	return lister.ListOwners(ctx, req)
}

// copyEvent copies an event deeply enough that no caller can change
// another's: every map and slice, down through JSON-like values.
func copyEvent(ev *Event) *Event { return copyEvents([]*Event{ev})[0] }

// copyEvents copies events as copyEvent does, with one allocation for all
// the events, one for their messages and one for their parts.
func copyEvents(src []*Event) []*Event {
	events := make([]Event, len(src))
	out := make([]*Event, len(src))
	nMsgs, nParts := 0, 0
	for _, ev := range src {
		if ev.Message != nil {
			nMsgs++
			nParts += len(ev.Message.Parts)
		}
	}
	msgs := make([]Message, 0, nMsgs)
	parts := make([]Part, 0, nParts)
	for i, ev := range src {
		e := &events[i]
		*e = *ev
		e.Metadata = state.CloneMap(ev.Metadata)
		e.Actions.StateDelta = state.CloneMap(ev.Actions.StateDelta)
		e.Actions.ArtifactDelta = maps.Clone(ev.Actions.ArtifactDelta)
		if ev.Actions.Summary != nil {
			s := *ev.Actions.Summary
			e.Actions.Summary = &s
		}
		if ev.Message != nil {
			start := len(parts)
			for _, p := range ev.Message.Parts {
				p.Data = state.CloneMap(p.Data)
				if p.File != nil {
					f := *p.File
					f.Data = append([]byte(nil), f.Data...)
					p.File = &f
				}
				if p.ToolCall != nil {
					tc := *p.ToolCall
					tc.Arguments = state.CloneMap(tc.Arguments)
					p.ToolCall = &tc
				}
				if p.ToolResult != nil {
					tr := *p.ToolResult
					tr.Content = state.Clone(tr.Content)
					p.ToolResult = &tr
				}
				parts = append(parts, p)
			}
			msgs = append(msgs, Message{Role: ev.Message.Role, Parts: parts[start:len(parts):len(parts)]})
			e.Message = &msgs[len(msgs)-1]
		}
		out[i] = e
	}
	return out
}
