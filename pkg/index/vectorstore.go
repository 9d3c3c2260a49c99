package index

import (
	"cmp"
	"context"
	"slices"
)

// vectorStore makes the in-process store's vector shards, one per (app,
// user): flat (the default) or chromem-go. Hector embeds; shards only
// store and compare.
type vectorStore interface {
	name() string
	newShard() (vectorShard, error)
	// restore reads a shard that export wrote.
	restore(payload []byte) (vectorShard, error)
}

type vectorShard interface {
	// upsert stores each document's vector, replacing the event's old one.
	upsert(ctx context.Context, docs []StoredDoc) error
	removeWhere(ctx context.Context, drop func(*Document) bool) error
	has(key eventKey) bool
	// query returns the nearest documents that f keeps, with their cosine
	// similarity.
	query(ctx context.Context, vec []float32, limit int, f Filter) ([]SearchResult, error)
	export() ([]byte, error)
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
