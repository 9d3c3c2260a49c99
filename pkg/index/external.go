package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hectormem/hector/pkg/index/embed"
	"github.com/hectormem/hector/pkg/session"
)

// Live is an index as a server runs it: a Service that follows the
// sessions' change feed, says how far along it is, and whether it can serve.
type Live interface {
	Service
	// Start gets the index ready to serve, once, before its first use; its
	// constructor does no I/O. An index in process catches up on what the
	// change feed recorded while it was down, and stops when ctx is done.
	// An external index asks its store once whether it answers, for the
	// log: a store that does not is no error, as every call asks again.
	Start(ctx context.Context) error
	// CatchUp applies what the change feed recorded since the index last saw it.
	CatchUp(ctx context.Context, sessions session.Service) error
	// Cursor is how far along the change feed the index is.
	Cursor(ctx context.Context) (int64, error)
	// Ready reports whether the index can be searched and written.
	Ready(ctx context.Context) error
	// Skipped reports the documents the store refused, which the index
	// went on without.
	Skipped() Skips
	Close() error
}

// maxWalkBack bounds how far back Index reads a session whose handle holds
// only unindexed events; older ones are the follower's to index.
const maxWalkBack = 1024

// External is a keyword, vector or hybrid index held in a Store: Hector
// tokenizes and embeds, the store keeps and scores. The process holds no
// index state: which events are indexed is asked of the store, and how
// far along the change feed the index is lives in a Position. Any number
// of replicas share one External store; one of them at a time follows the
// feed (CatchUp), while every replica indexes its own appends at once.
type External struct {
	kind     Kind
	store    Store
	embedder embed.Embedder
	tok      Tokenizer
	opts     options
	position Position

	mu    sync.Mutex
	fits  bool  // the store answered, with a collection made by this fingerprint
	stale error // the store's collection was made with another fingerprint

	skips skipLog
}

// NewExternal returns an index of kind keyword, vector or hybrid held
// in store (vector and hybrid need an embedder), its feed cursor kept by
// position (NewMemoryPosition when nil). It does not reach the store:
// Start, and every call, does. With WithSessions, deleting a session
// clears its entries; the catching up is left to CatchUp, which a server
// calls periodically.
func NewExternal(kind Kind, store Store, e embed.Embedder, position Position, opts ...Option) (*External, error) {
	switch kind {
	case KindKeyword:
		e = nil
	case KindVector, KindHybrid:
		if e == nil {
			return nil, fmt.Errorf("%w: a %s index needs an embedder", ErrInvalidArgument, kind)
		}
	default:
		return nil, fmt.Errorf("%w: index kind %q is not keyword, vector or hybrid", ErrInvalidArgument, kind)
	}
	if store == nil {
		return nil, fmt.Errorf("%w: an external index needs a store", ErrInvalidArgument)
	}
	if position == nil {
		position = NewMemoryPosition()
	}
	o := newOptions(opts)
	x := &External{kind: kind, store: store, embedder: e, tok: Tokenizer{Stem: o.stem}, opts: o, position: position}
	if o.sessions != nil {
		o.sessions.OnDelete(x.Clear)
	}
	return x, nil
}

// startProbe bounds how long Start waits for the store: a server's
// start-up must not hang on an engine that does not answer.
const startProbe = time.Second

func (x *External) Start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startProbe)
	defer cancel()
	if err := x.open(ctx); err != nil {
		x.logger().Warn("index: the store does not answer yet; searches fail until it does, and every call asks again", "store", x.store.Name(), "error", err)
	} else if err := x.staleness(); err != nil {
		x.logger().Warn("index: the store's collection was built differently; searches fail until `hector index rebuild`", "store", x.store.Name(), "error", err)
	}
	return nil
}

func (x *External) Name() string      { return string(x.kind) }
func (x *External) IsPersisted() bool { return true }

// fingerprint names how documents are made: a collection made another way
// (another embedder, stemming on or off) must be rebuilt.
func (x *External) fingerprint() string {
	fp := []string{"hector", string(x.kind)}
	if x.embedder != nil {
		fp = append(fp, x.embedder.Fingerprint())
	}
	if x.kind != KindVector && x.tok.Stem {
		fp = append(fp, "stemmed")
	}
	return strings.Join(fp, " ")
}

func (x *External) schema() Schema {
	s := Schema{Fingerprint: x.fingerprint()}
	if x.embedder != nil {
		s.Dimensions = x.embedder.Dimensions()
	}
	return s
}

// open asks the store until it answers with a collection this index's
// fingerprint fits; until then every call asks again, so a store that comes
// back, or a rebuild that another process ran, is seen without a restart.
func (x *External) open(ctx context.Context) error {
	x.mu.Lock()
	fits := x.fits
	x.mu.Unlock()
	if fits {
		return nil
	}
	// Not under the lock: a store that does not answer would hold every
	// other call (a readiness probe, a search) for as long as this one
	// waits. Two callers asking at once is harmless: Open is idempotent.
	err := x.store.Open(ctx, x.schema())
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case errors.Is(err, ErrNeedsRebuild):
		x.stale = err
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrStoreUnavailable, x.store.Name(), err)
	default:
		x.fits, x.stale = true, nil
	}
	return nil
}

func (x *External) staleness() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stale
}

// usable opens the store if need be and says whether it can be used.
func (x *External) usable(ctx context.Context) error {
	if err := x.open(ctx); err != nil {
		return err
	}
	return x.staleness()
}

// Ready reports whether the store answers. A collection that needs a
// rebuild is ready: its searches say what to do.
func (x *External) Ready(ctx context.Context) error {
	if err := x.open(ctx); err != nil {
		return err
	}
	if err := x.store.Ready(ctx); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStoreUnavailable, x.store.Name(), err)
	}
	return nil
}

func (x *External) Cursor(ctx context.Context) (int64, error) { return x.position.Cursor(ctx) }

func (x *External) Search(ctx context.Context, req *SearchRequest) (*SearchResponse, error) {
	limit, err := validateSearch(req)
	if err != nil {
		return nil, err
	}
	if err := x.usable(ctx); err != nil {
		return nil, err
	}
	resp := &SearchResponse{}
	if strings.TrimSpace(req.Query) == "" {
		return resp, nil
	}
	o := Owner{req.AppName, req.UserID}
	var terms []string
	if x.kind != KindVector {
		terms = x.tok.Tokens(req.Query)
	}
	var vec []float32
	if x.embedder != nil {
		vecs, err := x.embedder.Embed(ctx, []string{req.Query})
		if err != nil {
			return nil, fmt.Errorf("index: embedding the query: %w", err)
		}
		vec = vecs[0]
	}
	// Extra results let ties be broken the same way as in process.
	switch x.kind {
	case KindKeyword:
		resp.Results, err = x.ranked(ctx, o, StoreQuery{Terms: terms, Limit: limit + 10}, limit)
	case KindVector:
		resp.Results, err = x.ranked(ctx, o, StoreQuery{Vector: vec, Limit: limit + 10}, limit)
	default:
		n := hybridCandidates(limit)
		q := StoreQuery{Terms: terms, Vector: vec, Limit: limit + 10, Candidates: n}
		if hs, ok := x.store.(HybridStore); ok {
			resp.Results, err = x.fused(ctx, hs, o, q, limit)
			break
		}
		// Otherwise fused here, as in process. (Weaviate's own fusion breaks
		// ties between equal vectors its own way, so a rebuilt collection
		// could rank differently from the live one, and does not say which
		// signal found a result.) The two searches run at once.
		var g errgroup.Group
		lists := make([][]SearchResult, 2)
		g.Go(func() (err error) {
			lists[0], err = x.ranked(ctx, o, StoreQuery{Terms: terms, Limit: n}, n)
			return err
		})
		g.Go(func() (err error) { lists[1], err = x.ranked(ctx, o, StoreQuery{Vector: vec, Limit: n}, n); return err })
		if err = g.Wait(); err == nil {
			resp.Results = fuse(map[string][]SearchResult{string(KindKeyword): lists[0], string(KindVector): lists[1]}, limit)
		}
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// fused runs a hybrid search that the store fuses itself.
func (x *External) fused(ctx context.Context, hs HybridStore, o Owner, q StoreQuery, limit int) ([]SearchResult, error) {
	results, err := hs.SearchHybrid(ctx, o, q)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	return bestMatches(results, limit), nil
}

// ranked runs one search on the store and orders its results as the
// in-process index does, keeping the best limit.
func (x *External) ranked(ctx context.Context, o Owner, q StoreQuery, limit int) ([]SearchResult, error) {
	if len(q.Terms) == 0 && q.Vector == nil {
		return nil, nil
	}
	results, err := x.store.Search(ctx, o, q)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	return bestMatches(results, limit), nil
}

func (x *External) Index(ctx context.Context, s session.Session) error {
	if s == nil {
		return fmt.Errorf("%w: session is nil", ErrInvalidArgument)
	}
	if err := validateOwner(s.AppName(), s.UserID()); err != nil {
		return err
	}
	if err := x.usable(ctx); err != nil {
		return err
	}
	o := Owner{s.AppName(), s.UserID()}
	events := s.Events()
	for {
		docs := documentsOf(x.opts.extract, s.ID(), events)
		missing, err := x.missing(ctx, o, s.ID(), docs)
		if err != nil {
			return err
		}
		// Read further back only when nothing in the handle was indexed yet
		// and the handle does not reach the session's start: the events
		// before it may not be indexed either (a failed write, say).
		reachesStart := events.Len() == 0 || events.At(0).Seq <= 1
		if len(docs) == 0 || len(missing) < len(docs) || reachesStart || x.opts.sessions == nil || events.Len() >= maxWalkBack {
			return x.write(ctx, x.store, o, missing)
		}
		resp, err := x.opts.sessions.Get(ctx, &session.GetRequest{AppName: o.App, UserID: o.User, SessionID: s.ID(), NumRecentEvents: min(2*events.Len(), maxWalkBack)})
		if err != nil {
			return fmt.Errorf("index: reading session %q to index it: %w", s.ID(), err)
		}
		if resp.Session.Events().Len() <= events.Len() {
			return x.write(ctx, x.store, o, missing)
		}
		events = resp.Session.Events()
	}
}

func documentsOf(x Extraction, sessionID string, events session.Events) []Document {
	var docs []Document
	for ev := range events.All() {
		if doc, ok := x.documentOf(sessionID, ev); ok {
			docs = append(docs, doc)
		}
	}
	return docs
}

// missing returns the docs the store does not have yet.
func (x *External) missing(ctx context.Context, o Owner, sessionID string, docs []Document) ([]Document, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.EventID
	}
	absent, err := x.store.Missing(ctx, o, sessionID, ids)
	if err != nil {
		return nil, fmt.Errorf("index: asking %s what is indexed: %w", x.store.Name(), err)
	}
	want := make(map[string]bool, len(absent))
	for _, id := range absent {
		want[id] = true
	}
	out := docs[:0:0]
	for _, d := range docs {
		if want[d.EventID] {
			out = append(out, d)
		}
	}
	return out, nil
}

// write tokenizes and embeds docs and writes them to w.
func (x *External) write(ctx context.Context, w StoreWriter, o Owner, docs []Document) error {
	stored, err := x.prepare(ctx, docs)
	if err != nil || len(stored) == 0 {
		return err
	}
	if err := w.Write(ctx, o, stored); err != nil {
		return x.failed(ctx, "writing to", err)
	}
	return nil
}

// failed wraps the store's error; when the store does not answer at all it
// is ErrStoreUnavailable, which a client may retry.
func (x *External) failed(ctx context.Context, doing string, err error) error {
	if ctx.Err() == nil && x.store.Ready(ctx) != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrStoreUnavailable, doing, x.store.Name(), err)
	}
	return fmt.Errorf("index: %s %s: %w", doing, x.store.Name(), err)
}

// writeSkipping writes docs as write does, except that a document the store
// refuses while it answers is skipped, recorded and logged: the follower and
// a rebuild must go on past one bad document rather than stall for every
// user. A store that does not answer stops it, to be tried again.
func (x *External) writeSkipping(ctx context.Context, w StoreWriter, o Owner, docs []Document) error {
	stored, err := x.prepare(ctx, docs)
	if err != nil || len(stored) == 0 {
		return err
	}
	err = w.Write(ctx, o, stored)
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Which one? Each alone, and a refusal twice over with the store up is the document's.
	for _, d := range stored {
		one := []StoredDoc{d}
		if err = w.Write(ctx, o, one); err == nil {
			continue
		}
		if ctx.Err() != nil {
			return err
		}
		if rerr := x.store.Ready(ctx); rerr != nil {
			return fmt.Errorf("%w: writing to %s: %w", ErrStoreUnavailable, x.store.Name(), err)
		}
		if err = w.Write(ctx, o, one); err != nil {
			x.skip(o, d.Document, err)
		}
	}
	return nil
}

func (x *External) skip(o Owner, d Document, err error) {
	x.skips.add(SkippedDocument{AppName: o.App, UserID: o.User, SessionID: d.SessionID, EventID: d.EventID, Error: err.Error(), At: time.Now().UTC()})
	x.logger().Error("index: the store refused a document; skipped it (a rebuild tries it again)", "store", x.store.Name(),
		"app", o.App, "user", o.User, "session", d.SessionID, "event", d.EventID, "error", err)
}

// Skipped reports the documents the store refused and the follower skipped.
func (x *External) Skipped() Skips { return x.skips.report() }

// prepare tokenizes and embeds docs.
func (x *External) prepare(ctx context.Context, docs []Document) ([]StoredDoc, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	stored := make([]StoredDoc, len(docs))
	texts := make([]string, len(docs))
	for i, d := range docs {
		stored[i].Document = d
		texts[i] = d.Text
		if x.kind != KindVector {
			stored[i].Terms = x.tok.Tokens(d.Text)
		}
	}
	if x.embedder != nil {
		vecs, err := x.embedder.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("index: embedding: %w", err)
		}
		if len(vecs) != len(docs) {
			return nil, fmt.Errorf("index: the embedder returned %d vectors for %d texts", len(vecs), len(docs))
		}
		for i := range stored {
			stored[i].Vector = vecs[i]
		}
	}
	return stored, nil
}

func (x *External) Clear(ctx context.Context, appName, userID, sessionID string) error {
	if err := validateOwner(appName, userID); err != nil {
		return err
	}
	if err := x.open(ctx); err != nil {
		return err
	}
	if err := x.store.DeleteSession(ctx, Owner{appName, userID}, sessionID); err != nil {
		return fmt.Errorf("index: deleting session %q from %s: %w", sessionID, x.store.Name(), err)
	}
	return nil
}

// CatchUp applies the change feed from the shared cursor, if this process
// leads; otherwise another replica follows the feed and CatchUp does nothing.
func (x *External) CatchUp(ctx context.Context, sessions session.Service) error {
	if sessions == nil {
		return fmt.Errorf("%w: CatchUp needs the session service to read from", ErrInvalidArgument)
	}
	if err := x.usable(ctx); err != nil {
		return err
	}
	if lead, err := x.position.Lead(ctx); err != nil || !lead {
		return err
	}
	follow := &externalTarget{x: x, w: x.store, skipIndexed: true}
	for {
		cursor, err := x.position.Cursor(ctx)
		if err != nil {
			return err
		}
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor})
		if err != nil {
			return fmt.Errorf("index: reading the change feed: %w", err)
		}
		if len(resp.Changes) == 0 {
			return nil
		}
		if err := applyChanges(ctx, x.opts.extract, resp.Changes, follow); err != nil {
			return err
		}
		// When the cursor moved meanwhile (a rebuild rewound it), the next
		// round reads from where it is now: writing again is harmless.
		if _, err := x.position.Advance(ctx, cursor, resp.Cursor); err != nil {
			return err
		}
	}
}

// externalTarget applies changes to a store: the live collection (the
// follower, which writes only what is missing, and a scoped rebuild) or a
// full rebuild's new one.
type externalTarget struct {
	x           *External
	w           StoreWriter
	skipIndexed bool
	kept        map[Owner]map[[2]string]bool // what a scoped rebuild wrote, per owner
}

func (t *externalTarget) markOf(sessionRef) int64 { return 0 }

func (t *externalTarget) addSession(ctx context.Context, ref sessionRef, docs []Document, _ int64) error {
	o := Owner{ref.app, ref.user}
	if t.kept != nil {
		if t.kept[o] == nil {
			t.kept[o] = map[[2]string]bool{}
		}
		for _, d := range docs {
			t.kept[o][[2]string{d.SessionID, d.EventID}] = true
		}
	}
	if t.skipIndexed {
		var err error
		if docs, err = t.x.missing(ctx, o, ref.id, docs); err != nil {
			return err
		}
	}
	return t.x.writeSkipping(ctx, t.w, o, docs)
}

func (t *externalTarget) clearSession(ctx context.Context, ref sessionRef) error {
	if err := t.w.DeleteSession(ctx, Owner{ref.app, ref.user}, ref.id); err != nil {
		return fmt.Errorf("index: deleting session %q from %s: %w", ref.id, t.x.store.Name(), err)
	}
	return nil
}

// Rebuild replays the sessions into the store. A full rebuild (appName
// "") writes a new collection beside the live one and switches to it when
// complete, then leaves what was appended meanwhile to the follower. A
// rebuild of one app or user rewrites its documents in place and then
// deletes the ones the sessions no longer hold: searches meanwhile see the
// old documents or the rewritten ones, which are the same.
func (x *External) Rebuild(ctx context.Context, sessions session.Service, appName, userID string) error {
	if err := validateRebuild(sessions, appName, userID); err != nil {
		return err
	}
	if err := x.open(ctx); err != nil {
		return err
	}
	start := time.Now().UTC()
	var err error
	if appName == "" {
		err = x.rebuildAll(ctx, sessions)
	} else if err = x.staleness(); err != nil {
		err = fmt.Errorf("%w (all of it: a rebuild of one app or user cannot change how the collection was built)", err)
	} else {
		err = x.rebuildScope(ctx, sessions, appName, userID)
	}
	if err == nil { // every document was tried again: what it skipped anew is logged anew
		x.skips.forget(appName, userID, start)
	}
	return err
}

func (x *External) rebuildAll(ctx context.Context, sessions session.Service) error {
	b, err := x.store.Begin(ctx, x.schema())
	if err != nil {
		return rebuildFailed(ctx, err)
	}
	r := newReplay(ctx, x.opts.extract, &externalTarget{x: x, w: b}, x.opts.progress)
	cursor, err := r.feed(ctx, sessions, "")
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		if aerr := b.Abort(context.WithoutCancel(ctx)); aerr != nil {
			x.logger().Warn("index: could not drop an unfinished rebuild's collection", "store", x.store.Name(), "error", aerr)
		}
		return rebuildFailed(ctx, err)
	}
	x.mu.Lock()
	x.fits, x.stale = true, nil
	x.mu.Unlock()
	// Appends after cursor may have gone to the old collection: the
	// follower applies them to the new one from there.
	if err := x.position.Rewind(ctx, cursor); err != nil {
		return fmt.Errorf("index: the rebuild is live but its cursor could not be saved: %w", err)
	}
	r.done()
	return nil
}

func (x *External) rebuildScope(ctx context.Context, sessions session.Service, appName, userID string) error {
	owners := []owner{{appName, userID}}
	if userID == "" {
		var err error
		if owners, err = ownersOf(ctx, sessions, appName); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	t := &externalTarget{x: x, w: x.store, kept: map[Owner]map[[2]string]bool{}}
	r := newReplay(ctx, x.opts.extract, t, x.opts.progress)
	// Sessions as they are now, not the feed: replaying the feed into the
	// live collection would show deleted sessions again for a while.
	for _, o := range owners {
		if err := r.user(ctx, sessions, o); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	for _, o := range owners {
		kept := t.kept[Owner{o.app, o.user}]
		err := x.store.Prune(ctx, Owner{o.app, o.user}, func(sessionID, eventID string) bool { return kept[[2]string{sessionID, eventID}] })
		if err != nil {
			return fmt.Errorf("index: rebuild wrote every document but could not delete stale ones: %w", err)
		}
	}
	r.done()
	return nil
}

// ownersOf lists the users of one app that the change feed has seen.
func ownersOf(ctx context.Context, sessions session.Service, appName string) ([]owner, error) {
	var out []owner
	seen := map[owner]bool{}
	for cursor := int64(0); ; {
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: session.MaxChangesLimit})
		if err != nil {
			return nil, err
		}
		if len(resp.Changes) == 0 {
			return out, nil
		}
		for _, ch := range resp.Changes {
			if o := (owner{ch.AppName, ch.UserID}); ch.AppName == appName && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		cursor = resp.Cursor
	}
}

// Close releases the feed lease and the store's connections.
func (x *External) Close() error {
	return errors.Join(x.position.Close(), x.store.Close())
}

func (x *External) logger() *slog.Logger {
	if x.opts.logger != nil {
		return x.opts.logger
	}
	return slog.Default()
}
