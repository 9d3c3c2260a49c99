package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hectormem/hector/pkg/embed"
)

// NewKeyword returns a BM25 keyword index (KindKeyword) held in the
// process, one shard per (app, user) so a search never scans another
// user's entries. Persist it with WithSnapshot; stem English with
// WithStemming.
func NewKeyword(opts ...Option) (*Index, error) { return newInProcess(KindKeyword, nil, opts) }

// NewVector returns a vector index (KindVector) held in the process:
// documents embedded by e and searched exactly (persist with WithSnapshot).
// To keep them in an external engine instead, see New.
func NewVector(e embed.Embedder, opts ...Option) (*Index, error) {
	return newInProcess(KindVector, e, opts)
}

// NewHybrid returns a hybrid index (KindHybrid) held in the process:
// keyword and vector candidates fused into one score (see fuse), each
// result's Signals saying which found it, at which rank and score.
func NewHybrid(e embed.Embedder, opts ...Option) (*Index, error) {
	return newInProcess(KindHybrid, e, opts)
}

func newInProcess(kind Kind, e embed.Embedder, opts []Option) (*Index, error) {
	o := newOptions(opts)
	if o.onDisk {
		if o.chromem {
			return nil, fmt.Errorf("%w: chromem-go keeps its collections in memory, not in a file: persist them with WithSnapshot", ErrInvalidArgument)
		}
		s := newDiskStore(o.file, o.log)
		return New(kind, s, e, s.position(false), opts...)
	}
	m := &memoryStore{vectors: vectorStoreOf(o), shards: map[Owner]*memoryShard{}, logger: o.log}
	if o.file != "" {
		m.file = &snapshotFile{path: o.file}
	}
	return New(kind, m, e, m.position(false), opts...)
}

// inProcessStore is a Store in this process, which always leads its feed:
// it keeps its cursors (the feed's, and background vectors') with its
// documents.
type inProcessStore interface {
	Store
	IsPersisted() bool
	position(vectors bool) Position
}

func vectorStoreOf(o options) vectorStore {
	if o.chromem {
		return chromemStore{}
	}
	return flatStore{}
}

// memoryStore is the Store in the process: a BM25 shard and an exact
// vector shard per (app, user), persisted (when it has a file) as a
// snapshot that also holds how far along the change feed it is, so its
// Position is its own (memoryCursor).
type memoryStore struct {
	vectors vectorStore
	file    *snapshotFile // nil: not persisted
	logger  func() *slog.Logger

	mu          sync.RWMutex
	opened      bool
	terms       bool   // documents carry keyword terms
	dims        int    // and vectors of this many dimensions
	fingerprint string // how the documents were made; "" while it holds none
	stale       bool   // the snapshot was made another way and is not read (nor overwritten)
	cursor      int64  // the change feed is applied up to here
	embedded    int64  // and embedded in the background up to here
	shards      map[Owner]*memoryShard
}

// memoryShard is one (app, user)'s documents: BM25 over their terms and
// exact search over their vectors, whichever the index has.
type memoryShard struct {
	keyword *bm25Shard
	vector  vectorShard
}

func (m *memoryStore) Name() string {
	if m.file != nil {
		return "in process (" + m.file.path + ")"
	}
	return "in process"
}

func (m *memoryStore) IsPersisted() bool { return m.file != nil }

func (m *memoryStore) position(vectors bool) Position { return memoryCursor{m, vectors} }

// fingerprintOf is the schema's fingerprint with the vector store's name:
// flat and chromem-go snapshots cannot be read by one another.
func (m *memoryStore) fingerprintOf(s Schema) string {
	if s.Dimensions > 0 {
		return s.Fingerprint + " " + m.vectors.name()
	}
	return s.Fingerprint
}

// Open loads the snapshot, the first time. Only an unreadable directory is
// an error: a missing or damaged snapshot leaves the store empty, to be
// filled from the change feed.
func (m *memoryStore) Open(ctx context.Context, s Schema) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := m.fingerprintOf(s)
	if !m.opened {
		if err := m.load(want); err != nil {
			return err
		}
		m.opened = true
	}
	if m.fingerprint == "" { // empty: it takes the schema it is opened with
		m.fingerprint, m.terms, m.dims = want, s.Terms, s.Dimensions
	}
	if m.fingerprint != want {
		return fmt.Errorf("%w: it was built with %q and is configured with %q", ErrNeedsRebuild, m.fingerprint, want)
	}
	return nil
}

func (m *memoryStore) Ready(context.Context) error { return nil }

func (m *memoryStore) shard(o Owner) (*memoryShard, error) {
	if sh := m.lookup(o); sh != nil {
		return sh, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return shardIn(m.shards, o, m.vectors, m.terms, m.dims)
}

// shardIn returns o's shard in shards, making it (with BM25 when the
// documents carry terms, vectors when they have dims) if need be.
func shardIn(shards map[Owner]*memoryShard, o Owner, vectors vectorStore, terms bool, dims int) (*memoryShard, error) {
	if sh := shards[o]; sh != nil {
		return sh, nil
	}
	sh := &memoryShard{}
	if terms {
		sh.keyword = newBM25Shard()
	}
	if dims > 0 {
		var err error
		if sh.vector, err = vectors.newShard(); err != nil {
			return nil, err
		}
	}
	shards[o] = sh
	return sh, nil
}

func (m *memoryStore) lookup(o Owner) *memoryShard {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.shards[o]
}

func (m *memoryStore) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	sh, err := m.shard(o)
	if err != nil {
		return err
	}
	return sh.write(ctx, docs)
}

func (sh *memoryShard) write(ctx context.Context, docs []StoredDoc) error {
	if sh.vector != nil { // the one that can fail goes first
		docs := withVectors(docs)
		if sh.keyword != nil {
			sh.keyword.shareText(docs)
		}
		if err := sh.vector.upsert(ctx, docs); err != nil {
			return err
		}
	}
	if sh.keyword != nil {
		sh.keyword.add(docs)
	}
	return nil
}

// withVectors returns the docs that have a vector: a hybrid index that
// embeds in the background writes its documents first without one.
func withVectors(docs []StoredDoc) []StoredDoc {
	none := func(d StoredDoc) bool { return d.Vector == nil }
	if !slices.ContainsFunc(docs, none) {
		return docs
	}
	return slices.DeleteFunc(slices.Clone(docs), none)
}

func (m *memoryStore) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	if sh := m.lookup(o); sh != nil {
		return sh.removeWhere(ctx, func(d *Document) bool { return d.SessionID == sessionID })
	}
	return nil
}

func (sh *memoryShard) removeWhere(ctx context.Context, drop func(*Document) bool) error {
	if sh.keyword != nil {
		sh.keyword.removeWhere(drop)
	}
	if sh.vector != nil {
		return sh.vector.removeWhere(ctx, drop)
	}
	return nil
}

func (m *memoryStore) Missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) ([]string, error) {
	sh := m.lookup(o)
	if sh == nil {
		return eventIDs, nil
	}
	var missing []string
	for _, id := range eventIDs {
		key := eventKey{sessionID, id}
		if (sh.keyword == nil || !sh.keyword.has(key)) && (sh.vector == nil || !sh.vector.has(key)) {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

func (m *memoryStore) Search(ctx context.Context, o Owner, q StoreQuery) ([]SearchResult, error) {
	sh := m.lookup(o)
	switch {
	case sh == nil:
		return nil, nil
	case q.Vector != nil && sh.vector != nil:
		return sh.vector.query(ctx, q.Vector, q.Limit, q.Filter)
	case q.Vector == nil && sh.keyword != nil:
		return sh.keyword.search(unique(q.Terms), q.Limit, q.Filter), nil
	}
	return nil, nil
}

func (m *memoryStore) Prune(ctx context.Context, o Owner, keep func(sessionID, eventID string) bool) error {
	if sh := m.lookup(o); sh != nil {
		return sh.removeWhere(ctx, func(d *Document) bool { return !keep(d.SessionID, d.EventID) })
	}
	return nil
}

// DropOwner drops the owner's shard, which would keep their names in the
// snapshot, and saves the snapshot at once: the file on disk must not
// hold their documents until the next save, nor bring them back after a
// crash.
func (m *memoryStore) DropOwner(ctx context.Context, o Owner) error {
	m.mu.Lock()
	delete(m.shards, o)
	m.mu.Unlock()
	return m.save()
}

// Begin starts a full rebuild into shards of its own, which Commit swaps in.
func (m *memoryStore) Begin(ctx context.Context, s Schema) (StoreBuild, error) {
	return &memoryBuild{m: m, schema: s, shards: map[Owner]*memoryShard{}}, nil
}

// Close saves the snapshot, when the store has a file.
func (m *memoryStore) Close() error { return m.save() }

type memoryBuild struct {
	m      *memoryStore
	schema Schema
	mu     sync.Mutex
	shards map[Owner]*memoryShard
}

func (b *memoryBuild) shard(o Owner) (*memoryShard, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return shardIn(b.shards, o, b.m.vectors, b.schema.Terms, b.schema.Dimensions)
}

func (b *memoryBuild) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	sh, err := b.shard(o)
	if err != nil {
		return err
	}
	return sh.write(ctx, docs)
}

func (b *memoryBuild) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	b.mu.Lock()
	sh := b.shards[o]
	b.mu.Unlock()
	if sh != nil {
		return sh.removeWhere(ctx, func(d *Document) bool { return d.SessionID == sessionID })
	}
	return nil
}

func (b *memoryBuild) Commit(context.Context) error {
	m := b.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shards, m.opened, m.stale = b.shards, true, false
	m.fingerprint, m.terms, m.dims = m.fingerprintOf(b.schema), b.schema.Terms, b.schema.Dimensions
	return nil
}

func (b *memoryBuild) Abort(context.Context) error { return nil }

// memoryCursor is the in-process store's Position (or, with vectors set,
// its background vectors' position): its process always leads, and the
// cursor is saved in the snapshot with the documents it stands for.
type memoryCursor struct {
	m       *memoryStore
	vectors bool
}

func (memoryCursor) Lead(context.Context) (bool, error) { return true, nil }

// at is the cursor; callers hold m.mu.
func (c memoryCursor) at() *int64 {
	if c.vectors {
		return &c.m.embedded
	}
	return &c.m.cursor
}

func (c memoryCursor) Cursor(context.Context) (int64, error) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	return *c.at(), nil
}

func (c memoryCursor) Advance(_ context.Context, from, to int64) (bool, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if *c.at() != from {
		return false, nil
	}
	*c.at() = to
	return true, nil
}

// Rewind ends a full rebuild: the snapshot is saved at once, so a restart
// finds the rebuilt documents and not the old ones.
func (c memoryCursor) Rewind(_ context.Context, to int64) error {
	c.m.mu.Lock()
	*c.at() = min(*c.at(), to)
	c.m.mu.Unlock()
	if c.vectors {
		return nil // saved with the documents' cursor, which a rebuild rewinds next
	}
	return c.m.save()
}

func (memoryCursor) Close() error { return nil }

// save writes the snapshot. The cursor is read before the shards: every
// change up to it is in them (the follower writes before it advances),
// and what is written meanwhile is in them too or applied again at start.
func (m *memoryStore) save() error {
	if m.file == nil {
		return nil
	}
	m.mu.RLock()
	snap := &snapshot{Fingerprint: m.fingerprint, Cursor: m.cursor, VectorLag: max(m.cursor-m.embedded, 0), Terms: m.terms, Dims: m.dims}
	shards := make(map[Owner]*memoryShard, len(m.shards))
	for o, sh := range m.shards {
		shards[o] = sh
	}
	unread := !m.opened || m.stale
	m.mu.RUnlock()
	if unread {
		return nil // the file on disk is as good as it was
	}
	for o, sh := range shards {
		own := ownerSnapshot{App: o.App, User: o.User}
		if sh.keyword != nil {
			own.Keyword = sh.keyword.export()
		}
		if sh.vector != nil {
			var err error
			if own.Vectors, err = sh.vector.export(); err != nil {
				return fmt.Errorf("index: snapshotting: %w", err)
			}
		}
		snap.Owners = append(snap.Owners, own)
	}
	return m.file.write(snap)
}

// load reads the snapshot; callers hold mu. A snapshot made another way
// (want is how the index is configured now) is not read: its fingerprint
// is kept, so that searches say to rebuild.
func (m *memoryStore) load(want string) error {
	if m.file == nil {
		return nil
	}
	log := m.logger()
	s, err := m.file.read()
	switch {
	case errors.Is(err, errNoSnapshot):
		log.Info("index: no snapshot yet; the index is built from the sessions' change feed", "path", m.file.path)
		return nil
	case err != nil:
		if _, statErr := os.Stat(filepath.Dir(m.file.path)); statErr != nil {
			return fmt.Errorf("index: snapshot directory: %w", statErr)
		}
		log.Warn("index: snapshot unusable; the index is built again from the sessions' change feed", "path", m.file.path, "error", err)
		return nil
	case s.Fingerprint != want:
		m.fingerprint, m.stale = s.Fingerprint, true
		return nil
	}
	shards := make(map[Owner]*memoryShard, len(s.Owners))
	for _, own := range s.Owners {
		sh := &memoryShard{}
		if s.Terms {
			sh.keyword = newBM25Shard()
			err = sh.keyword.restore(own.Keyword)
		}
		if s.Dims > 0 && err == nil {
			sh.vector, err = m.vectors.restore(own.Vectors)
		}
		if err != nil {
			log.Warn("index: snapshot unusable; the index is built again from the sessions' change feed", "path", m.file.path, "error", err)
			return nil
		}
		shards[Owner{own.App, own.User}] = sh
	}
	m.shards, m.cursor, m.fingerprint, m.terms, m.dims = shards, s.Cursor, s.Fingerprint, s.Terms, s.Dims
	m.embedded = s.Cursor - s.VectorLag
	return nil
}
