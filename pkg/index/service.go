// Package index is Hector's search over past conversations: keyword (BM25),
// vector (an embedder plus exact search in process) and hybrid indexes, in
// process or in an external store (Weaviate, Qdrant, PostgreSQL, Pinecone),
// all derived from the session service and rebuildable from it at any time.
// Every search is scoped to one (app, user).
package index

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/session"

	"github.com/hectormem/hector/pkg/errkind"
)

var (
	// ErrInvalidArgument wraps every error caused by bad input.
	ErrInvalidArgument error = errkind.InvalidArgument
	// ErrNeedsRebuild: the index on disk was built differently from how it
	// is configured now (another embedder, say) and must be rebuilt.
	ErrNeedsRebuild = errors.New("the index must be rebuilt: run `hector index rebuild`")
)

// Kind is what an index finds: words (keyword: BM25), meaning (vector: an
// embedder's nearest neighbours) or both, fused (hybrid).
type Kind string

// The kinds of index.
const (
	KindKeyword Kind = "keyword"
	KindVector  Kind = "vector"
	KindHybrid  Kind = "hybrid"
)

// Kinds lists every kind, in the order they are documented.
var Kinds = []Kind{KindKeyword, KindVector, KindHybrid}

// Service is a search index over session events.
type Service interface {
	// Index indexes the session's events that are not indexed yet: a turn
	// costs work for its new events only.
	Index(ctx context.Context, s session.Session) error
	// Search finds the events of one (app, user) that best match the query,
	// best first.
	Search(ctx context.Context, req *SearchRequest) (*SearchResponse, error)
	// Rebuild replays sessions from the source of truth into a new index and
	// swaps it in when complete: for one user (appName and userID set), one
	// app (userID empty) or everything (both empty). Searches keep working
	// meanwhile; a cancelled rebuild leaves the old index as it was.
	Rebuild(ctx context.Context, sessions session.Service, appName, userID string) error
	// Clear removes one session's entries. It has session.DeleteHook's shape,
	// so that deleting a session clears its index entries.
	Clear(ctx context.Context, appName, userID, sessionID string) error
	// IsPersisted reports whether the index survives a restart.
	IsPersisted() bool
	// Name names the index's Kind.
	Name() string
}

// SearchRequest asks one (app, user)'s memory. Limit defaults to DefaultLimit.
type SearchRequest struct {
	Query           string
	AppName, UserID string
	Limit           int
	// Filter keeps the search to some of the user's events.
	Filter Filter
	// RecencyHalfLife, when set, prefers recent results: among the best
	// candidates, a result's weight falls with its age (from the newest)
	// from 1 toward 1/4, halfway there after one half-life, so that it
	// orders the relevant results and does not replace them with recent
	// ones the query barely matches. Its "recency" signal is the weight.
	RecencyHalfLife time.Duration
	// AskedAt is when the question is asked, what a time it names back
	// from ("last week", "5 days ago") is counted from: now, unless set
	// (a replay of past conversations sets it).
	AskedAt time.Time
}

// Limits on results.
const (
	DefaultLimit = 10
	MaxLimit     = 1000
)

// MaxQueryBytes bounds a query: some 1,300 words, more than anyone asks
// with (an encoder reads a query's first few hundred pieces anyway). A
// search's work grows with its query's words, and a request body's limit
// let one 12 MB query hold a core for nine seconds.
const MaxQueryBytes = 8 << 10

// CutQuery is q cut to at most MaxQueryBytes, at the end of a word (or of a
// character, when one word runs past the limit): the query of a caller
// that searches with a message of any length, as a gateway's runtime does
// with the turn it is about to answer, where refusing would lose the
// memory for the turn.
func CutQuery(q string) string {
	if len(q) <= MaxQueryBytes {
		return q
	}
	end := MaxQueryBytes
	for end > 0 && !utf8.RuneStart(q[end]) {
		end--
	}
	if space := strings.LastIndexFunc(q[:end+1], unicode.IsSpace); space > 0 {
		end = space
	}
	return q[:end]
}

// SearchResponse holds results ordered by score, highest first.
type SearchResponse struct {
	Results []SearchResult
}

// SearchResult is one matching event with its provenance. Every store
// fills the same fields (Document.Result builds them); Metadata is the
// caller's own, and no store writes it.
type SearchResult struct {
	SessionID string    `json:"session_id"`
	EventID   string    `json:"event_id"`
	Content   string    `json:"content"`
	Author    string    `json:"author"`
	Role      string    `json:"role,omitempty"` // the message's: user, assistant, system or tool
	Seq       int64     `json:"seq,omitempty"`  // the event's sequence number in its session
	Timestamp time.Time `json:"timestamp"`
	Score     float64   `json:"score"`
	// Signals says which searches of a hybrid index found the result, each
	// at which rank and with which score of its own (keyword, vector).
	Signals  map[string]Signal `json:"signals,omitempty"`
	Metadata map[string]any    `json:"metadata,omitempty"`
	// terms is how many of a keyword search's terms the result holds,
	// where the store counted them (this package's stores do), else 0:
	// what hybrid fusion would otherwise read the result's words for.
	terms int
	// textLater: the store left Content out, to give it once the results
	// are cut (see textsLater); doc is its number for the document.
	textLater bool
	doc       int64
	// unrelated: a hybrid search's encoder put the result under its floor
	// (see fuse); a session's other results lend it nothing.
	unrelated bool
}

// Signal is what one search of a hybrid index made of a result.
type Signal struct {
	Rank  int     `json:"rank"` // 1 for the best
	Score float64 `json:"score"`
}
