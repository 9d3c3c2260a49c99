package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hectormem/hector/pkg/ident"
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

// Index is a keyword, vector or hybrid index over a Store, and the one
// pipeline every store goes through: it tokenizes and embeds documents,
// fuses hybrid results where the store does not, follows the sessions'
// change feed, and rebuilds. The store keeps and scores: in process (the
// store NewKeyword, NewVector and NewHybrid make), or an external engine
// (New) that any number of replicas share, one of them at a time
// following the feed while each indexes its own appends at once.
type Index struct {
	kind     Kind
	store    Store
	local    *memoryStore // the store, when it is in process
	embedder embed.Embedder
	tok      Tokenizer
	opts     options
	position Position

	mu    sync.Mutex
	fits  bool  // the store answered, with a collection made by this fingerprint
	stale error // the store's collection was made with another fingerprint

	followMu sync.Mutex   // one catch-up at a time in this process
	floor    atomic.Int64 // the feed is applied up to here, as this process last saw it
	leads    atomic.Bool  // this process led the feed when it last asked

	skips skipLog
}

// New returns an index of kind keyword, vector or hybrid held in store
// (vector and hybrid need an embedder), its feed cursor kept by position
// (NewMemoryPosition when nil). It does no I/O: Start, and every call,
// reaches the store. With WithSessions it follows that service's change
// feed: CatchUp applies it, which a server calls periodically and after
// deleting a session, and Index catches up to the appended events.
func New(kind Kind, store Store, e embed.Embedder, position Position, opts ...Option) (*Index, error) {
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
		return nil, fmt.Errorf("%w: an index needs a store", ErrInvalidArgument)
	}
	if position == nil {
		position = NewMemoryPosition()
	}
	o := newOptions(opts)
	x := &Index{kind: kind, store: store, embedder: e, tok: Tokenizer{Stem: o.stem}, opts: o, position: position}
	x.local, _ = store.(*memoryStore)
	x.leads.Store(x.local != nil) // the process always leads its own store
	return x, nil
}

// startProbe bounds how long Start waits for the store: a server's
// start-up must not hang on an engine that does not answer.
const startProbe = time.Second

// Start opens the store. One in process loads its snapshot and catches up
// on what the change feed recorded while it was down (when it follows a
// session service), logging its progress. An external one is asked once,
// for at most a second, whether it answers: one that does not is no
// error, as every call asks again.
func (x *Index) Start(ctx context.Context) error {
	if x.local != nil {
		if err := x.open(ctx); err != nil {
			return err
		}
		if err := x.staleness(); err != nil {
			x.logger().Error("index: built differently from its configuration; searches fail until `hector index rebuild`", "error", err)
			return nil
		}
		if x.opts.sessions == nil {
			return nil
		}
		return x.follow(ctx, x.opts.sessions, 0, true)
	}
	ctx, cancel := context.WithTimeout(ctx, startProbe)
	defer cancel()
	if lead, err := x.position.Lead(ctx); err == nil {
		x.leads.Store(lead)
	}
	if err := x.open(ctx); err != nil {
		x.logger().Warn("index: the store does not answer yet; searches fail until it does, and every call asks again", "store", x.store.Name(), "error", err)
	} else if err := x.staleness(); err != nil {
		x.logger().Warn("index: the store's collection was built differently; searches fail until `hector index rebuild`", "store", x.store.Name(), "error", err)
	}
	return nil
}

func (x *Index) Name() string { return string(x.kind) }

// IsPersisted reports whether the index survives a restart: in an
// external store always, in process with a snapshot.
func (x *Index) IsPersisted() bool { return x.local == nil || x.local.IsPersisted() }

// InProcess reports whether the index's store is the one in this process.
func (x *Index) InProcess() bool { return x.local != nil }

// fingerprint names how documents are made: a collection made another way
// (another embedder, stemming on or off) must be rebuilt.
func (x *Index) fingerprint() string {
	fp := []string{"hector", string(x.kind)}
	if x.embedder != nil {
		fp = append(fp, x.embedder.Fingerprint())
	}
	if x.kind != KindVector && x.tok.Stem {
		fp = append(fp, "stemmed")
	}
	return strings.Join(fp, " ")
}

func (x *Index) schema() Schema {
	s := Schema{Fingerprint: x.fingerprint(), Terms: x.kind != KindVector}
	if x.embedder != nil {
		s.Dimensions = x.embedder.Dimensions()
	}
	return s
}

// open asks the store until it answers with a collection this index's
// fingerprint fits; until then every call asks again, so a store that comes
// back, or a rebuild that another process ran, is seen without a restart.
func (x *Index) open(ctx context.Context) error {
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

func (x *Index) staleness() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stale
}

// usable opens the store if need be and says whether it can be used.
func (x *Index) usable(ctx context.Context) error {
	if err := x.open(ctx); err != nil {
		return err
	}
	return x.staleness()
}

// Ready reports whether the store answers. A collection that needs a
// rebuild is ready: its searches say what to do.
func (x *Index) Ready(ctx context.Context) error {
	if err := x.open(ctx); err != nil {
		return err
	}
	if err := x.store.Ready(ctx); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStoreUnavailable, x.store.Name(), err)
	}
	return nil
}

func (x *Index) Cursor(ctx context.Context) (int64, error) { return x.position.Cursor(ctx) }

func (x *Index) Search(ctx context.Context, req *SearchRequest) (*SearchResponse, error) {
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
func (x *Index) fused(ctx context.Context, hs HybridStore, o Owner, q StoreQuery, limit int) ([]SearchResult, error) {
	results, err := hs.SearchHybrid(ctx, o, q)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	return bestMatches(results, limit), nil
}

// ranked runs one search on the store and orders its results as the
// in-process index does, keeping the best limit.
func (x *Index) ranked(ctx context.Context, o Owner, q StoreQuery, limit int) ([]SearchResult, error) {
	if len(q.Terms) == 0 && q.Vector == nil {
		return nil, nil
	}
	results, err := x.store.Search(ctx, o, q)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	return bestMatches(results, limit), nil
}

// Index indexes the session's events that the index does not hold yet.
// When the index follows a session service and this process leads the
// feed, it catches up on the feed to the handle's newest event: appends
// and deletions reach the store in the feed's order, and a handle holding
// only recent events leaves nothing out. Otherwise (another replica leads,
// or there is no feed) it writes the handle's events past the feed cursor
// that the store lacks: one question to the store, then the write.
func (x *Index) Index(ctx context.Context, s session.Session) error {
	if s == nil {
		return fmt.Errorf("%w: session is nil", ErrInvalidArgument)
	}
	if err := validateOwner(s.AppName(), s.UserID()); err != nil {
		return err
	}
	if err := x.usable(ctx); err != nil {
		return err
	}
	events := s.Events()
	if events.Len() == 0 {
		return nil
	}
	newest := events.At(events.Len() - 1).Cursor
	if newest > 0 && newest <= x.floor.Load() {
		return nil
	}
	if x.opts.sessions != nil && newest > 0 && x.leads.Load() {
		return x.follow(ctx, x.opts.sessions, newest, false)
	}
	// Events are in the order of their cursors: skip the applied ones without visiting them.
	floor := x.floor.Load()
	first := sort.Search(events.Len(), func(i int) bool { c := events.At(i).Cursor; return c == 0 || c > floor })
	var docs []Document
	for i := first; i < events.Len(); i++ {
		if doc, ok := x.opts.extract.documentOf(s.ID(), events.At(i)); ok {
			docs = append(docs, doc)
		}
	}
	o := Owner{s.AppName(), s.UserID()}
	missing, err := x.missing(ctx, o, s.ID(), docs)
	if err != nil {
		return err
	}
	return x.write(ctx, x.store, o, missing)
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
func (x *Index) missing(ctx context.Context, o Owner, sessionID string, docs []Document) ([]Document, error) {
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
func (x *Index) write(ctx context.Context, w StoreWriter, o Owner, docs []Document) error {
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
func (x *Index) failed(ctx context.Context, doing string, err error) error {
	if ctx.Err() == nil && x.store.Ready(ctx) != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrStoreUnavailable, doing, x.store.Name(), err)
	}
	return fmt.Errorf("index: %s %s: %w", doing, x.store.Name(), err)
}

// writeSkipping writes docs as write does, except that a document the store
// refuses while it answers is skipped, recorded and logged: the follower and
// a rebuild must go on past one bad document rather than stall for every
// user. A store that does not answer stops it, to be tried again.
func (x *Index) writeSkipping(ctx context.Context, w StoreWriter, o Owner, docs []Document) error {
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

func (x *Index) skip(o Owner, d Document, err error) {
	x.skips.add(SkippedDocument{AppName: o.App, UserID: o.User, SessionID: d.SessionID, EventID: d.EventID, Error: err.Error(), At: time.Now().UTC()})
	x.logger().Error("index: the store refused a document; skipped it (a rebuild tries it again)", "store", x.store.Name(),
		"app", o.App, "user", o.User, "session", d.SessionID, "event", d.EventID, "error", err)
}

// Skipped reports the documents the store refused and the follower skipped.
func (x *Index) Skipped() Skips { return x.skips.report() }

// prepare tokenizes and embeds docs.
func (x *Index) prepare(ctx context.Context, docs []Document) ([]StoredDoc, error) {
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

func (x *Index) Clear(ctx context.Context, appName, userID, sessionID string) error {
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

// CatchUp applies the change feed from the index's cursor to its head, if
// this process leads the feed. Another replica applies only the session
// deletions past the cursor (as far as one page of the feed), so that a
// session deleted through it is gone from the shared store at once; the
// leader applies the rest.
func (x *Index) CatchUp(ctx context.Context, sessions session.Service) error {
	if sessions == nil {
		return fmt.Errorf("%w: CatchUp needs the session service to read from", ErrInvalidArgument)
	}
	if err := x.usable(ctx); err != nil {
		return err
	}
	lead, err := x.position.Lead(ctx)
	if err != nil {
		return err
	}
	x.leads.Store(lead)
	if lead {
		return x.follow(ctx, sessions, 0, false)
	}
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	x.floor.Store(cursor)
	resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor})
	if err != nil {
		return fmt.Errorf("index: reading the change feed: %w", err)
	}
	deletions := slices.DeleteFunc(resp.Changes, func(ch session.Change) bool { return ch.Kind != session.ChangeSessionDeleted })
	return applyChanges(ctx, x.opts.extract, deletions, &storeTarget{x: x, w: x.store})
}

// follow applies the change feed from the index's cursor: to its head
// (upTo 0), or until the cursor reaches upTo. Only the process that leads
// the feed follows it. With logProgress it logs how far along it is, every
// few seconds, for a catch-up at start that may be long.
func (x *Index) follow(ctx context.Context, sessions session.Service, upTo int64, logProgress bool) error {
	x.followMu.Lock()
	defer x.followMu.Unlock()
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	target := &storeTarget{x: x, w: x.store, skipIndexed: true}
	logged := time.Now()
	for {
		x.floor.Store(cursor)
		if upTo > 0 && cursor >= upTo {
			return nil
		}
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor})
		if err != nil {
			return fmt.Errorf("index: reading the change feed: %w", err)
		}
		if len(resp.Changes) == 0 {
			return nil
		}
		if err := applyChanges(ctx, x.opts.extract, resp.Changes, target); err != nil {
			return err
		}
		moved, err := x.position.Advance(ctx, cursor, resp.Cursor)
		if err != nil {
			return err
		}
		if cursor = resp.Cursor; !moved { // a rebuild rewound it meanwhile: go on from there (writing again is harmless)
			if cursor, err = x.position.Cursor(ctx); err != nil {
				return err
			}
		}
		if logProgress && time.Since(logged) > progressEvery {
			x.logger().Info("index: catching up on the change feed", "cursor", cursor, "head", resp.Head)
			logged = time.Now()
		}
	}
}

// progressEvery is how often a long catch-up logs how far along it is.
const progressEvery = 5 * time.Second

// applyChanges applies a page of the change feed to target, a session's
// run of appends at a time.
func applyChanges(ctx context.Context, x Extraction, changes []session.Change, target changeTarget) error {
	for i := 0; i < len(changes); {
		ch := changes[i]
		o := Owner{ch.AppName, ch.UserID}
		if ch.Kind == session.ChangeSessionDeleted {
			if err := target.clearSession(ctx, o, ch.SessionID); err != nil {
				return err
			}
			i++
			continue
		}
		var docs []Document
		for ; i < len(changes) && changes[i].Kind == session.ChangeEventAppended && changes[i].SessionID == ch.SessionID &&
			changes[i].AppName == ch.AppName && changes[i].UserID == ch.UserID; i++ {
			if doc, ok := x.documentOf(ch.SessionID, changes[i].Event); ok {
				docs = append(docs, doc)
			}
		}
		if err := target.addSession(ctx, o, ch.SessionID, docs); err != nil {
			return err
		}
	}
	return nil
}

// changeTarget is where applyChanges writes: the live store, or a rebuild's.
type changeTarget interface {
	addSession(ctx context.Context, o Owner, sessionID string, docs []Document) error
	clearSession(ctx context.Context, o Owner, sessionID string) error
}

// storeTarget applies changes to a store: the live collection (the
// follower, which writes only what is missing, and a scoped rebuild) or a
// full rebuild's new one.
type storeTarget struct {
	x           *Index
	w           StoreWriter
	skipIndexed bool
	kept        map[Owner]map[[2]string]bool // what a scoped rebuild wrote, per owner
}

func (t *storeTarget) addSession(ctx context.Context, o Owner, sessionID string, docs []Document) error {
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
		if docs, err = t.x.missing(ctx, o, sessionID, docs); err != nil {
			return err
		}
	}
	return t.x.writeSkipping(ctx, t.w, o, docs)
}

func (t *storeTarget) clearSession(ctx context.Context, o Owner, sessionID string) error {
	if err := t.w.DeleteSession(ctx, o, sessionID); err != nil {
		return fmt.Errorf("index: deleting session %q from %s: %w", sessionID, t.x.store.Name(), err)
	}
	return nil
}

// Rebuild replays the sessions into the store. A full rebuild (appName
// "") writes a new collection beside the live one and switches to it when
// complete, then leaves what was appended meanwhile to the follower. A
// rebuild of one app or user rewrites its documents in place and then
// deletes the ones the sessions no longer hold: searches meanwhile see the
// old documents or the rewritten ones, which are the same.
func (x *Index) Rebuild(ctx context.Context, sessions session.Service, appName, userID string) error {
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

func (x *Index) rebuildAll(ctx context.Context, sessions session.Service) error {
	b, err := x.store.Begin(ctx, x.schema())
	if err != nil {
		return rebuildFailed(ctx, err)
	}
	r := newReplay(ctx, x.opts.extract, &storeTarget{x: x, w: b}, x.opts.progress)
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

func (x *Index) rebuildScope(ctx context.Context, sessions session.Service, appName, userID string) error {
	owners := []Owner{{appName, userID}}
	if userID == "" {
		var err error
		if owners, err = ownersOf(ctx, sessions, appName); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	t := &storeTarget{x: x, w: x.store, kept: map[Owner]map[[2]string]bool{}}
	r := newReplay(ctx, x.opts.extract, t, x.opts.progress)
	// Sessions as they are now, not the feed: replaying the feed into the
	// live collection would show deleted sessions again for a while.
	for _, o := range owners {
		if err := r.user(ctx, sessions, o); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	for _, o := range owners {
		kept := t.kept[o]
		err := x.store.Prune(ctx, o, func(sessionID, eventID string) bool { return kept[[2]string{sessionID, eventID}] })
		if err != nil {
			return fmt.Errorf("index: rebuild wrote every document but could not delete stale ones: %w", err)
		}
	}
	r.done()
	return nil
}

// ownersOf lists the users of one app that the change feed has seen.
func ownersOf(ctx context.Context, sessions session.Service, appName string) ([]Owner, error) {
	var out []Owner
	seen := map[Owner]bool{}
	for cursor := int64(0); ; {
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: session.MaxChangesLimit})
		if err != nil {
			return nil, err
		}
		if len(resp.Changes) == 0 {
			return out, nil
		}
		for _, ch := range resp.Changes {
			if o := (Owner{ch.AppName, ch.UserID}); ch.AppName == appName && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		cursor = resp.Cursor
	}
}

// Close releases the feed lease and the store's connections; an index in
// process saves its snapshot.
func (x *Index) Close() error {
	return errors.Join(x.position.Close(), x.store.Close())
}

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

func (x *Index) logger() *slog.Logger { return x.opts.log() }
