package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/telemetry"
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
	// VectorCursor is how far along the change feed the vectors are, and
	// whether they are embedded in the background, behind the terms.
	VectorCursor(ctx context.Context) (cursor int64, background bool, err error)
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
	local    inProcessStore // the store, when it is in process
	embedder embed.Embedder
	fusion   Fusion // how a hybrid search weighs its signals
	// forgot: the owners forgotten while a rebuild runs (see forgetting).
	forgotMu sync.Mutex
	forgot   map[Owner]bool
	rebuilds int // running
	tok      Tokenizer
	opts     options
	position Position

	mu    sync.Mutex
	fits  bool  // the store answered, with a collection made by this fingerprint
	stale error // the store's collection was made with another fingerprint

	followMu sync.Mutex   // one catch-up at a time in this process
	floor    atomic.Int64 // the feed is applied up to here, as this process last saw it
	leads    atomic.Bool  // this process led the feed when it last asked

	lane *vectorLane // embeds in the background; nil when documents are embedded as they are written

	catchingUp     atomic.Bool // a catch-up runs in the background (see catchUpAtStart, heal)
	healing        atomic.Pointer[healing]
	resetting      atomic.Int32    // heals whose catch-up has not begun
	life           context.Context // the background's, until Close
	stopBackground context.CancelFunc
	background     sync.WaitGroup

	pretokenized pretokenized // by appenders, for the follower

	skips skipLog
}

// New returns an index of kind keyword, vector or hybrid held in store
// (vector and hybrid need an embedder), its feed cursor kept by position
// (NewInMemoryPosition when nil). It does no I/O: Start, and every call,
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
		position = NewInMemoryPosition()
	}
	o := newOptions(opts)
	fusion := Fusion{VectorWeight: DefaultVectorWeight}
	if e != nil {
		if w := embed.VectorWeight(e); w > 0 {
			fusion.VectorWeight = w
		}
		fusion.SimilarityFloor = embed.SimilarityFloor(e)
		e = tracedEmbedder{e}
	}
	if o.fusion != nil {
		if err := o.fusion.check(); err != nil {
			return nil, err
		}
		fusion = *o.fusion
	}
	x := &Index{kind: kind, store: store, embedder: e, fusion: fusion, tok: Tokenizer{Stem: o.stem}, opts: o, position: position}
	x.life, x.stopBackground = context.WithCancel(context.Background())
	x.local, _ = store.(inProcessStore)
	if d, ok := store.(*diskStore); ok && o.sessions != nil {
		d.onDamage = x.heal
	}
	x.leads.Store(x.local != nil) // the process always leads its own store
	if o.background && kind == KindHybrid && o.sessions != nil {
		at := o.vectorsAt
		switch {
		case x.local != nil:
			at = x.local.position(true)
		case at == nil:
			at = NewInMemoryPosition()
		}
		x.lane = newVectorLane(at, o.vectorLag)
	}
	return x, nil
}

// startProbe bounds how long Start waits for the store: a server's
// start-up must not hang on an engine that does not answer.
const startProbe = time.Second

// Start opens the store. One in process opens its file (or loads its
// snapshot) and catches up on what the change feed recorded while it was
// down (when it follows a session service), logging its progress; one made
// another way (by another embedder, say) starts anew and is built from the
// feed by that catch-up. An external one is asked once, for at most a
// second, whether it answers: one that does not is no error, as every call
// asks again.
func (x *Index) Start(ctx context.Context) error {
	if x.local != nil {
		if err := x.open(ctx); err != nil {
			return err
		}
		stale := x.staleness()
		switch {
		case stale != nil && x.opts.sessions == nil:
			x.logger().Error("index: built differently from its configuration; searches fail until `hector index rebuild`", "error", stale)
			return nil
		case x.opts.sessions == nil:
			return nil
		case stale != nil: // the file or snapshot is only a copy of what the feed holds
			// Without the error's advice to rebuild: this is the rebuild.
			x.logger().Warn("index: built differently from the configuration; building it again from the change feed, in the background when there is much of it",
				"why", strings.TrimPrefix(stale.Error(), ErrNeedsRebuild.Error()+": "))
			if err := x.startAnew(ctx); err != nil {
				return err
			}
		}
		if err := x.checkFile(ctx); err != nil {
			return err
		}
		if x.lane != nil {
			x.startLane(ctx)
		}
		return x.catchUpAtStart(ctx)
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
	if x.lane != nil {
		x.startLane(ctx)
	}
	return nil
}

func (x *Index) Name() string { return string(x.kind) }

// IsPersisted reports whether the index survives a restart: in an
// external store always, in process with a file or a snapshot.
func (x *Index) IsPersisted() bool { return x.local == nil || x.local.IsPersisted() }

// InProcess reports whether the index's store is the one in this process.
func (x *Index) InProcess() bool { return x.local != nil }

// fingerprint names how documents are made: a collection made another way
// (another embedder, stemming on or off) must be rebuilt.
func (x *Index) fingerprint() string {
	fp := []string{"hector", string(x.kind)}
	if x.embedder != nil {
		fp = append(fp, x.embedder.Fingerprint(), "authored") // see embeddedText
	}
	if x.kind == KindHybrid {
		fp = append(fp, "preceded") // see befores
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

func (x *Index) Search(ctx context.Context, req *SearchRequest) (_ *SearchResponse, err error) {
	limit, err := validateSearch(req)
	if err != nil {
		return nil, err
	}
	ctx, span := telemetry.Span(ctx, "index.search", attribute.String("hector.index.kind", string(x.kind)),
		attribute.String("hector.index.store", x.store.Name()), attribute.Bool("hector.index.filtered", !req.Filter.IsZero()))
	defer func() { telemetry.End(span, err) }()
	if err := x.usable(ctx); err != nil {
		return nil, err
	}
	if err := x.Healing(ctx); err != nil {
		return nil, err
	}
	resp := &SearchResponse{}
	if strings.TrimSpace(req.Query) == "" {
		return resp, nil
	}
	o := Owner{req.AppName, req.UserID}
	query, periods := req.Query, []period(nil)
	if x.kind == KindHybrid {
		asked := req.AskedAt
		if asked.IsZero() {
			asked = time.Now()
		}
		// A time the query names is matched against when each turn was
		// said (preferNamedTime), and searched for by nothing else.
		periods, query = readTimes(req.Query, asked)
	}
	var terms []string
	if x.kind != KindVector {
		terms = x.tok.Tokens(query)
	}
	// The best candidates, more than the limit: a short question among
	// them gives part of its score to its reply (creditReplies), and a
	// search that prefers recent results weighs them by their age; then
	// the best limit is kept.
	want := hybridCandidates(limit)
	f := req.Filter
	switch x.kind {
	case KindKeyword:
		// Extra results let ties be broken the same way whichever the store.
		resp.Results, err = x.ranked(ctx, o, StoreQuery{Terms: terms, Limit: want + 10, Filter: f}, want)
	case KindVector:
		var vec []float32
		if vec, err = x.embedQuery(ctx, req.Query); err == nil {
			resp.Results, err = x.ranked(ctx, o, StoreQuery{Vector: vec, Limit: want + 10, Filter: f}, want)
		}
	default:
		// The keyword search runs while the query is embedded, which takes
		// longer, and the vector search after; they are fused here for every
		// store alike: fusion needs each keyword result's share of the query's
		// terms (see fuse and coverage).
		var g errgroup.Group
		var keyword, vector []SearchResult
		g.Go(func() (err error) {
			deeper := keywordCandidates(limit)
			keyword, err = x.ranked(ctx, o, StoreQuery{Terms: terms, Limit: deeper, Filter: f}, deeper)
			return err
		})
		g.Go(func() error {
			vec, err := x.embedQuery(ctx, query)
			if err == nil {
				vector, err = x.ranked(ctx, o, StoreQuery{Vector: vec, Limit: want, Filter: f}, want)
			}
			return err
		})
		if err = g.Wait(); err == nil {
			resp.Results = fuse(keyword, vector, x.coverage(terms), x.fusion, want)
		}
	}
	if err != nil {
		return nil, err
	}
	floor := 0.0 // keyword and fused scores start at 0, similarities rather higher
	if x.kind == KindVector {
		floor = x.fusion.SimilarityFloor
	}
	creditReplies(resp.Results, floor)
	if x.kind == KindHybrid {
		countAssistantsLess(resp.Results)
		preferNamedAuthor(req.Query, resp.Results)
		preferNamedTime(periods, resp.Results)
		creditSessions(resp.Results)
		userFirst(resp.Results) // last: it moves a turn only past its session's next one
	}
	if req.RecencyHalfLife > 0 {
		preferRecent(resp.Results, req.RecencyHalfLife)
	}
	resp.Results = resp.Results[:min(limit, len(resp.Results))]
	if resp.Results, err = x.textsOf(ctx, o, resp.Results); err != nil {
		return nil, err
	}
	return resp, nil
}

// textsOf gives the results the texts their store left out of the search
// (see textsLater).
func (x *Index) textsOf(ctx context.Context, o Owner, results []SearchResult) ([]SearchResult, error) {
	later, ok := x.store.(textsLater)
	if !ok || !slices.ContainsFunc(results, func(r SearchResult) bool { return r.textLater }) {
		return results, nil
	}
	results, err := later.texts(ctx, o, results)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	return results, nil
}

// embedQuery is the vector the query is searched with.
func (x *Index) embedQuery(ctx context.Context, query string) ([]float32, error) {
	vecs, err := embed.Queries(ctx, x.embedder, []string{query})
	if err != nil {
		return nil, fmt.Errorf("index: embedding the query: %w", err)
	}
	return vecs[0], nil
}

// ranked runs one search on the store and orders its results the same
// way whichever the store, keeping the best limit; their texts may come
// once they are cut to the limit asked (see textsOf).
func (x *Index) ranked(ctx context.Context, o Owner, q StoreQuery, limit int) (_ []SearchResult, err error) {
	if len(q.Terms) == 0 && q.Vector == nil {
		return nil, nil
	}
	q.textsLater = true
	signal := "keyword"
	if q.Vector != nil {
		signal = "vector"
	}
	ctx, span := telemetry.Span(ctx, "index.search."+signal, attribute.String("hector.index.store", x.store.Name()))
	defer func() { telemetry.End(span, err) }()
	results, err := x.store.Search(ctx, o, q)
	if err != nil {
		return nil, x.failed(ctx, "searching", err)
	}
	span.SetAttributes(attribute.Int("hector.index.results", len(results)))
	if !q.Filter.IsZero() { // a store may keep a little more (see Filter.Window)
		results = slices.DeleteFunc(results, func(r SearchResult) bool { return !q.Filter.keepsResult(r) })
	}
	return bestMatches(results, limit), nil
}

// Forget removes every document of one (app, user), of whichever session,
// and what the store keeps of them besides (see OwnerDropper), and says
// how many documents it found: erasing a person. Asked again, it finds 0.
func (x *Index) Forget(ctx context.Context, appName, userID string) (int, error) {
	if err := validateOwner(appName, userID); err != nil {
		return 0, err
	}
	if err := x.open(ctx); err != nil {
		return 0, err
	}
	o, found := Owner{appName, userID}, map[[2]string]bool{} // a store may ask twice of a document (terms, vector)
	if err := x.store.Prune(ctx, o, func(sessionID, eventID string) bool { found[[2]string{sessionID, eventID}] = true; return false }); err != nil {
		return 0, fmt.Errorf("index: erasing a user's documents from %s: %w", x.store.Name(), err)
	}
	if d, ok := x.store.(OwnerDropper); ok {
		if err := d.DropOwner(ctx, o); err != nil {
			return 0, fmt.Errorf("index: erasing a user from %s: %w", x.store.Name(), err)
		}
	}
	lin, _, err := lineageOf(ctx, x.opts.sessions)
	if err == nil {
		err = x.bindFile(ctx, x.opts.sessions, lin)
	}
	if err != nil { // the next start finds the file behind the erasures, and builds it again
		x.logger().Warn("index: could not record the erasure in the index file", "error", err)
	}
	x.skips.forget(appName, userID, time.Now()) // the skip log names their events
	x.forgotMu.Lock()
	if x.forgot != nil {
		x.forgot[o] = true
	}
	x.forgotMu.Unlock()
	return len(found), nil
}

// forgetting starts (on) or ends (!on) noting the owners Forget forgets
// while a rebuild runs; ending returns those noted so far.
func (x *Index) forgetting(on bool) []Owner {
	x.forgotMu.Lock()
	defer x.forgotMu.Unlock()
	if on {
		if x.rebuilds++; x.forgot == nil {
			x.forgot = map[Owner]bool{}
		}
		return nil
	}
	owners := slices.Collect(maps.Keys(x.forgot))
	if x.rebuilds--; x.rebuilds == 0 {
		x.forgot = nil
	}
	return owners
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

// Close releases the feed lease and the store's connections; an index in
// process writes what it holds in memory to its file or snapshot.
func (x *Index) Close() error {
	x.stopBackground()
	x.background.Wait()
	var closeLane error
	if x.lane != nil {
		x.lane.close()
		closeLane = x.lane.position.Close()
	}
	return errors.Join(closeLane, x.position.Close(), x.store.Close())
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
	if err := req.Filter.validate(); err != nil {
		return 0, err
	}
	switch {
	case len(req.Query) > MaxQueryBytes:
		return 0, fmt.Errorf("%w: query is %d bytes, over the limit of %d: search with fewer words", ErrInvalidArgument, len(req.Query), MaxQueryBytes)
	case req.RecencyHalfLife < 0:
		return 0, fmt.Errorf("%w: recency half-life %s is negative", ErrInvalidArgument, req.RecencyHalfLife)
	case req.Limit < 0 || req.Limit > MaxLimit:
		return 0, fmt.Errorf("%w: limit %d is outside 0..%d", ErrInvalidArgument, req.Limit, MaxLimit)
	case req.Limit == 0:
		return DefaultLimit, nil
	}
	return req.Limit, nil
}

func (x *Index) logger() *slog.Logger { return x.opts.log() }

// tracedEmbedder gives each embedding call a span: how many texts, by which
// embedder (never the texts).
type tracedEmbedder struct{ embed.Embedder }

func (e tracedEmbedder) Embed(ctx context.Context, texts []string) (_ [][]float32, err error) {
	ctx, span := telemetry.Span(ctx, "embed", attribute.String("hector.embedder", e.Fingerprint()), attribute.Int("hector.texts", len(texts)))
	defer func() { telemetry.End(span, err) }()
	return e.Embedder.Embed(ctx, texts)
}

func (e tracedEmbedder) EmbedQueries(ctx context.Context, queries []string) (_ [][]float32, err error) {
	ctx, span := telemetry.Span(ctx, "embed", attribute.String("hector.embedder", e.Fingerprint()), attribute.Int("hector.texts", len(queries)))
	defer func() { telemetry.End(span, err) }()
	return embed.Queries(ctx, e.Embedder, queries)
}
