// Package recall is what every surface asks when it recalls a user's
// memory (REST memory:search, the agents' and MCP's search_memory tool,
// the console): the past messages that match a query, from the index,
// and the curated facts that match it, from the facts' store, found and
// cut to size the same way whichever asks.
package recall

import (
	"context"
	"time"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
)

// DefaultFacts is how many facts a recall returns at least, whatever its
// limit on messages: a search for one message still shows the facts.
const DefaultFacts = 5

// Memory is a user's memory as recall reads it: the index, and the facts
// (nil when the deployment keeps none).
type Memory struct {
	Index index.Service
	Facts *facts.Service
}

// Request is one recall. The scope (App, User; FactScope for facts, the
// user's own by default) is the caller's, never the query's.
type Request struct {
	Query     string
	App, User string
	Limit     int // messages at most (0: the index's default)
	Filter    index.Filter
	// RecencyHalfLife, when set, ranks newer messages higher.
	RecencyHalfLife time.Duration
	// AsOf, when set, is when the search is asked instead of now: the
	// facts found are those that held then, and a time the query counts
	// back ("last week") counts back from it.
	AsOf time.Time
	// FactScope is whose facts to search (default: the user's).
	FactScope *facts.Scope
	// Snippet cuts each message's content to about this many characters
	// around the query's words (0: whole).
	Snippet int
}

// Result is what a recall found, best first in each list.
type Result struct {
	Messages []Message
	// Facts are nil when the memory keeps none or the request is filtered
	// (a session, an author, a time is no fact's).
	Facts []facts.Match
}

// Message is a past message that matches the query.
type Message struct {
	index.SearchResult
	// Truncated: Content is a snippet around the query's words.
	Truncated bool `json:"truncated,omitempty"`
}

// Recall searches m for req.
func (m Memory) Recall(ctx context.Context, req Request) (*Result, error) {
	resp, err := m.Index.Search(ctx, &index.SearchRequest{Query: req.Query, AppName: req.App, UserID: req.User,
		Limit: req.Limit, Filter: req.Filter, RecencyHalfLife: req.RecencyHalfLife, AskedAt: req.AsOf})
	if err != nil {
		return nil, err
	}
	out := &Result{Messages: make([]Message, len(resp.Results))}
	for i, r := range resp.Results {
		out.Messages[i].SearchResult = r
		if req.Snippet > 0 {
			out.Messages[i].Content = index.Snippet(r.Content, req.Query, req.Snippet)
			out.Messages[i].Truncated = out.Messages[i].Content != r.Content
		}
	}
	if m.Facts == nil || !req.Filter.IsZero() {
		return out, nil
	}
	scope := facts.UserScope(req.App, req.User)
	if req.FactScope != nil {
		scope = *req.FactScope
	}
	found, err := m.Facts.Search(ctx, scope, req.Query, max(req.Limit, DefaultFacts), req.AsOf)
	if err != nil {
		return nil, err
	}
	out.Facts = found
	if out.Facts == nil {
		out.Facts = []facts.Match{}
	}
	return out, nil
}
