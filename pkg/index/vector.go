package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/hectormem/hector/pkg/index/embed"
)

// vectorStore keeps vectors, one shard per (app, user). Hector embeds;
// stores only store and compare.
type vectorStore interface {
	name() string
	newShard(o owner) (vectorShard, error)
	dropShard(vectorShard)
	snapshot(shards map[owner]vectorShard) ([]byte, error)
	restore(payload []byte) (map[owner]vectorShard, error)
}

type vectorShard interface {
	upsert(ctx context.Context, docs []Document, vecs [][]float32) error
	removeSession(ctx context.Context, sessionID string) error
	// query returns the nearest documents with their cosine similarity.
	query(ctx context.Context, vec []float32, limit int) ([]SearchResult, error)
}

// NewVector returns a vector index (KindVector): documents embedded by
// e and searched exactly, in memory (persist with WithSnapshot). To keep
// them in an external engine instead, see NewExternal.
func NewVector(e embed.Embedder, opts ...Option) (*Index, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: a vector index needs an embedder", ErrInvalidArgument)
	}
	o := newOptions(opts)
	return newIndex(KindVector, newVectorEngine(e, o), o)
}

func newVectorEngine(e embed.Embedder, o options) *vectorEngine {
	if o.chromem {
		return &vectorEngine{embedder: e, store: &chromemStore{}}
	}
	return &vectorEngine{embedder: e, store: newFlatStore()}
}

type vectorEngine struct {
	embedder embed.Embedder
	store    vectorStore
}

func (e *vectorEngine) fingerprint() string {
	return e.store.name() + " " + e.embedder.Fingerprint()
}

func (e *vectorEngine) newShard(o owner) (shard, error) {
	vs, err := e.store.newShard(o)
	if err != nil {
		return nil, err
	}
	return &embeddedShard{e.embedder, vs}, nil
}

func (e *vectorEngine) dropShard(s shard) { e.store.dropShard(s.(*embeddedShard).store) }

func (e *vectorEngine) snapshot(shards map[owner]shard) ([]byte, error) {
	inner := make(map[owner]vectorShard, len(shards))
	for o, s := range shards {
		inner[o] = s.(*embeddedShard).store
	}
	return e.store.snapshot(inner)
}

func (e *vectorEngine) restore(payload []byte) (map[owner]shard, error) {
	inner, err := e.store.restore(payload)
	if err != nil {
		return nil, err
	}
	shards := make(map[owner]shard, len(inner))
	for o, vs := range inner {
		shards[o] = &embeddedShard{e.embedder, vs}
	}
	return shards, nil
}

// embeddedShard embeds documents and queries for a vector shard.
type embeddedShard struct {
	embedder embed.Embedder
	store    vectorShard
}

func (s *embeddedShard) add(ctx context.Context, docs []Document) error {
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	vecs, err := s.embedder.Embed(ctx, texts)
	if err != nil {
		return fmt.Errorf("index: embedding: %w", err)
	}
	if len(vecs) != len(docs) {
		return fmt.Errorf("index: the embedder returned %d vectors for %d texts", len(vecs), len(docs))
	}
	return s.store.upsert(ctx, docs, vecs)
}

func (s *embeddedShard) removeSession(ctx context.Context, sessionID string) error {
	return s.store.removeSession(ctx, sessionID)
}

func (s *embeddedShard) search(ctx context.Context, query string, limit int) ([]SearchResult, error) {
	vecs, err := s.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("index: embedding the query: %w", err)
	}
	// Stores break ties between equal scores each their own way (by point
	// ID, by insertion order); fetching extra and ordering here makes the
	// results the same whichever store, and however the index was built.
	results, err := s.store.query(ctx, vecs[0], limit+10)
	if err != nil {
		return nil, err
	}
	return bestMatches(results, limit), nil
}

// bestMatches orders results as every index does and keeps the best
// limit. Nothing in common with the query is not a match, however few
// results there are.
func bestMatches(results []SearchResult, limit int) []SearchResult {
	kept := results[:0]
	for _, r := range results {
		if r.Score > 1e-6 {
			kept = append(kept, r)
		}
	}
	sortResults(kept)
	return kept[:min(limit, len(kept))]
}

// sortResults orders by score, then newest first, then event ID.
func sortResults(rs []SearchResult) {
	slices.SortStableFunc(rs, func(a, b SearchResult) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), b.Timestamp.Compare(a.Timestamp), cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.EventID, b.EventID))
	})
}
