// Package factsearch lets the search_memory tool show the curated facts
// that match a query (facts.Service.Search) beside past messages: it joins
// pkg/facts to pkg/index, which know nothing of each other.
package factsearch

import (
	"context"
	"time"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/tool"
)

// Finder finds facts in the scope scopeOf gives an invocation.
func Finder(svc *facts.Service, scopeOf func(tool.Invocation) facts.Scope) index.FactFinder {
	return func(ctx context.Context, inv tool.Invocation, query string, limit int) ([]index.FactHit, error) {
		matches, err := svc.Search(ctx, scopeOf(inv), query, limit, time.Time{})
		if err != nil {
			return nil, err
		}
		hits := make([]index.FactHit, len(matches))
		for i, m := range matches {
			hits[i] = index.FactHit{Key: m.Key, Value: m.Value, Category: m.Category, ValidFrom: m.ValidFrom, Score: m.Score}
		}
		return hits, nil
	}
}
