package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/session"
)

// shard holds one (app, user)'s entries. Adding an event that is already
// there replaces it, so replaying a change is harmless.
type shard interface {
	add(ctx context.Context, docs []Document) error
	removeSession(ctx context.Context, sessionID string) error
	search(ctx context.Context, query string, limit int) ([]SearchResult, error)
}

// engine makes and persists the shards of one kind of index.
type engine interface {
	newShard(o owner) (shard, error)
	dropShard(s shard)
	// fingerprint names how entries are made (the embedder, say): an index
	// saved with another fingerprint must be rebuilt.
	fingerprint() string
	snapshot(shards map[owner]shard) ([]byte, error)
	restore(payload []byte) (map[owner]shard, error)
}

type owner struct{ app, user string }

type sessionRef struct {
	owner
	id string
}

// Index is a search index of one type (keyword, vector or hybrid); it
// implements Service. It does what every type shares: scoping, the
// per-session record of what is indexed, catching up on the change feed,
// rebuilding and snapshots. Its engine does the rest.
type Index struct {
	kind    Kind
	engine  engine
	opts    options
	persist *snapshotFile

	// swapMu is held shared by every change and exclusively while a
	// rebuild swaps its shards in, so no change lands in a discarded shard.
	swapMu sync.RWMutex

	mu     sync.RWMutex
	shards map[owner]shard
	marks  map[sessionRef]int64 // the highest event seq indexed, per session
	cursor int64                // the change feed is applied up to here
	stale  error                // set when the saved index no longer fits the configuration

	sessionLocks keyedMutex
}

func newIndex(kind Kind, e engine, opts options) (*Index, error) {
	c := &Index{kind: kind, engine: e, opts: opts, shards: map[owner]shard{}, marks: map[sessionRef]int64{}}
	if opts.snapshotPath != "" {
		c.persist = &snapshotFile{path: opts.snapshotPath}
		if err := c.load(); err != nil {
			return nil, err
		}
	}
	if opts.sessions != nil {
		// Deleting a session clears its entries at once, without the caller wiring it.
		opts.sessions.OnDelete(c.Clear)
	}
	return c, nil
}

// Start catches up on what the change feed recorded while the index was
// down (with WithSessions). A stale index is not caught up: its searches
// say to rebuild it instead.
func (c *Index) Start(ctx context.Context) error {
	if c.opts.sessions == nil || c.stale != nil {
		return nil
	}
	return c.CatchUp(ctx, c.opts.sessions)
}

func (c *Index) Name() string { return string(c.kind) }

// Cursor is how far along the sessions' change feed the index is.
func (c *Index) Cursor(context.Context) (int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cursor, nil
}

// Ready is always true of an index in the process.
func (c *Index) Ready(context.Context) error { return nil }

// Skipped is always empty: an index in the process refuses no document.
func (c *Index) Skipped() Skips    { return Skips{} }
func (c *Index) IsPersisted() bool { return c.persist != nil }

// validateOwner checks the (app, user) every search and write is scoped to.
func validateOwner(app, user string) error {
	if err := ident.Check("app name", app); err != nil {
		return err
	}
	return ident.Check("user ID", user)
}

// validateSearch checks a request and returns its limit.
func validateSearch(req *SearchRequest) (int, error) {
	if req == nil {
		return 0, fmt.Errorf("%w: search request is nil", ErrInvalidArgument)
	}
	if err := validateOwner(req.AppName, req.UserID); err != nil {
		return 0, err
	}
	switch {
	case req.Limit < 0 || req.Limit > MaxLimit:
		return 0, fmt.Errorf("%w: limit %d is outside 0..%d", ErrInvalidArgument, req.Limit, MaxLimit)
	case req.Limit == 0:
		return DefaultLimit, nil
	}
	return req.Limit, nil
}

func (c *Index) Search(ctx context.Context, req *SearchRequest) (*SearchResponse, error) {
	limit, err := validateSearch(req)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	sh, stale := c.shards[owner{req.AppName, req.UserID}], c.stale
	c.mu.RUnlock()
	if stale != nil {
		return nil, stale
	}
	resp := &SearchResponse{}
	if sh == nil || strings.TrimSpace(req.Query) == "" {
		return resp, nil
	}
	results, err := sh.search(ctx, req.Query, limit)
	if err != nil {
		return nil, err
	}
	resp.Results = results
	return resp, nil
}

func (c *Index) Index(ctx context.Context, s session.Session) error {
	if s == nil {
		return fmt.Errorf("%w: session is nil", ErrInvalidArgument)
	}
	if err := validateOwner(s.AppName(), s.UserID()); err != nil {
		return err
	}
	if err := c.staleness(); err != nil {
		return err
	}
	c.swapMu.RLock()
	defer c.swapMu.RUnlock()
	ref := sessionRef{owner{s.AppName(), s.UserID()}, s.ID()}
	defer c.sessionLocks.lock(ref)()

	mark := c.mark(ref)
	if s.LastSeq() <= mark {
		return nil
	}
	events := s.Events()
	if (events.Len() == 0 || events.At(0).Seq > mark+1) && c.opts.sessions != nil {
		// The handle holds only recent events: read what is missing.
		resp, err := c.opts.sessions.Get(ctx, &session.GetRequest{AppName: ref.app, UserID: ref.user, SessionID: ref.id, NumRecentEvents: int(s.LastSeq() - mark)})
		if err != nil {
			return fmt.Errorf("index: reading session %q to index it: %w", ref.id, err)
		}
		events = resp.Session.Events()
	}
	// Events are in sequence order: skip the indexed ones without visiting them.
	first := sort.Search(events.Len(), func(i int) bool { return events.At(i).Seq > mark })
	var docs []Document
	last := mark
	for i := first; i < events.Len(); i++ {
		ev := events.At(i)
		if doc, ok := c.opts.extract.documentOf(ref.id, ev); ok {
			docs = append(docs, doc)
		}
		last = max(last, ev.Seq)
	}
	return c.apply(ctx, ref, docs, last)
}

// apply adds docs to the session's shard and records last as indexed. Callers hold the session's lock.
func (c *Index) apply(ctx context.Context, ref sessionRef, docs []Document, last int64) error {
	if len(docs) > 0 {
		sh, err := c.shard(ref.owner)
		if err != nil {
			return err
		}
		if err := sh.add(ctx, docs); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.marks[ref] = max(c.marks[ref], last)
	c.mu.Unlock()
	return nil
}

func (c *Index) mark(ref sessionRef) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.marks[ref]
}

func (c *Index) shard(o owner) (shard, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sh := c.shards[o]; sh != nil {
		return sh, nil
	}
	sh, err := c.engine.newShard(o)
	if err != nil {
		return nil, err
	}
	c.shards[o] = sh
	return sh, nil
}

func (c *Index) staleness() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stale
}

func (c *Index) Clear(ctx context.Context, appName, userID, sessionID string) error {
	if err := validateOwner(appName, userID); err != nil {
		return err
	}
	c.swapMu.RLock()
	defer c.swapMu.RUnlock()
	ref := sessionRef{owner{appName, userID}, sessionID}
	defer c.sessionLocks.lock(ref)()
	return c.clear(ctx, ref)
}

func (c *Index) clear(ctx context.Context, ref sessionRef) error {
	c.mu.Lock()
	sh := c.shards[ref.owner]
	delete(c.marks, ref)
	c.mu.Unlock()
	if sh == nil {
		return nil
	}
	return sh.removeSession(ctx, ref.id)
}

// CatchUp applies what the change feed recorded since the index last saw it:
// events appended and sessions deleted while it was down or not told.
func (c *Index) CatchUp(ctx context.Context, sessions session.Service) error {
	if err := c.staleness(); err != nil {
		return err
	}
	c.swapMu.RLock()
	defer c.swapMu.RUnlock()
	for {
		c.mu.RLock()
		after := c.cursor
		c.mu.RUnlock()
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: after})
		if err != nil {
			return fmt.Errorf("index: reading the change feed: %w", err)
		}
		if len(resp.Changes) == 0 {
			return nil
		}
		if err := applyChanges(ctx, c.opts.extract, resp.Changes, c); err != nil {
			return err
		}
		c.mu.Lock()
		c.cursor = resp.Cursor
		c.mu.Unlock()
	}
}

// applyChanges applies a page of the change feed to target (a live index, or
// a rebuild's private state), a session's run of appends at a time.
func applyChanges(ctx context.Context, x Extraction, changes []session.Change, target changeTarget) error {
	for i := 0; i < len(changes); {
		ch := changes[i]
		ref := sessionRef{owner{ch.AppName, ch.UserID}, ch.SessionID}
		if ch.Kind == session.ChangeSessionDeleted {
			if err := target.clearSession(ctx, ref); err != nil {
				return err
			}
			i++
			continue
		}
		var docs []Document
		mark, last := target.markOf(ref), int64(0)
		for ; i < len(changes) && changes[i].Kind == session.ChangeEventAppended && changes[i].SessionID == ref.id &&
			changes[i].AppName == ref.app && changes[i].UserID == ref.user; i++ {
			ev := changes[i].Event
			if ev.Seq <= mark {
				continue
			}
			if doc, ok := x.documentOf(ref.id, ev); ok {
				docs = append(docs, doc)
			}
			last = max(last, ev.Seq)
		}
		if last > 0 {
			if err := target.addSession(ctx, ref, docs, last); err != nil {
				return err
			}
		}
	}
	return nil
}

// changeTarget is where applyChanges writes: a live index or a rebuild's.
type changeTarget interface {
	markOf(ref sessionRef) int64
	addSession(ctx context.Context, ref sessionRef, docs []Document, last int64) error
	clearSession(ctx context.Context, ref sessionRef) error
}

func (c *Index) markOf(ref sessionRef) int64 { return c.mark(ref) }

func (c *Index) addSession(ctx context.Context, ref sessionRef, docs []Document, last int64) error {
	defer c.sessionLocks.lock(ref)()
	return c.apply(ctx, ref, docs, last)
}

func (c *Index) clearSession(ctx context.Context, ref sessionRef) error {
	defer c.sessionLocks.lock(ref)()
	return c.clear(ctx, ref)
}

// Close saves the index if it is persisted.
func (c *Index) Close() error {
	if c.persist == nil {
		return nil
	}
	return c.Save()
}

func (c *Index) logger() *slog.Logger {
	if c.opts.logger != nil {
		return c.opts.logger
	}
	return slog.Default()
}

// keyedMutex locks by key, so different sessions are indexed in parallel
// while one session's changes are applied one at a time.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[sessionRef]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(ref sessionRef) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[sessionRef]*keyedEntry{}
	}
	e := k.locks[ref]
	if e == nil {
		e = &keyedEntry{}
		k.locks[ref] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.locks, ref)
		}
		k.mu.Unlock()
	}
}

var errCancelled = errors.New("index: rebuild cancelled; the old index is unchanged")
