package index

import (
	"context"

	"github.com/google/uuid"

	"github.com/hectormem/hector/internal/hashid"
	"github.com/hectormem/hector/pkg/errkind"
)

// Store keeps an index's documents and scores them: in the process (the
// store NewKeyword, NewVector and NewHybrid make), or an engine outside it
// (Weaviate, Qdrant, PostgreSQL, Pinecone) that every replica writes to and
// searches, none keeping a copy, so a replica's memory does not grow with
// the number of events. The Index tokenizes, embeds and fuses. Every call
// is scoped to one owner, and a store must never return another owner's
// document.
type Store interface {
	// Name says which store and where, for messages and start-up lines
	// (never a credential).
	Name() string
	// Open connects and makes sure the live collection exists, creating it
	// for schema when there is none. A collection built with another
	// fingerprint (another embedder, say) is an error wrapping
	// ErrNeedsRebuild; any other error means the store cannot be reached.
	Open(ctx context.Context, schema Schema) error
	// Ready reports whether the store answers.
	Ready(ctx context.Context) error
	StoreWriter
	// Missing returns which of one session's events have no document in
	// the store, so a document is embedded and written once.
	Missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) ([]string, error)
	// Search returns the owner's best documents for the query, best first:
	// BM25 over Terms, or nearest to Vector (cosine similarity as the
	// score); a query sets one of the two.
	Search(ctx context.Context, o Owner, q StoreQuery) ([]SearchResult, error)
	// Prune deletes the owner's documents that keep rejects: a scoped
	// rebuild rewrites an owner's documents in place, then prunes the rest.
	Prune(ctx context.Context, o Owner, keep func(sessionID, eventID string) bool) error
	// Begin starts a full rebuild into a new collection beside the live
	// one; committing it makes it the live one atomically.
	Begin(ctx context.Context, schema Schema) (StoreBuild, error)
	Close() error
}

// OwnerDropper is a Store that keeps something of an owner besides their
// documents (a Weaviate tenant, an in-process shard and its snapshot):
// erasing a person drops it, once their documents are gone.
type OwnerDropper interface {
	DropOwner(ctx context.Context, o Owner) error
}

// Schema is what a store needs to know to make a collection.
type Schema struct {
	// Fingerprint names how documents are made: a collection made another
	// way (another embedder, stemming on or off) must be rebuilt.
	Fingerprint string
	// Dimensions of the documents' vectors, 0 when they carry none.
	Dimensions int
	// Terms: the documents carry keyword terms.
	Terms bool
}

// StoreWriter writes documents: to the live collection, or to a rebuild's.
type StoreWriter interface {
	// Write stores docs, replacing any document of the same event: writing
	// twice leaves one document.
	Write(ctx context.Context, o Owner, docs []StoredDoc) error
	DeleteSession(ctx context.Context, o Owner, sessionID string) error
}

// StoreBuild is a full rebuild's new collection.
type StoreBuild interface {
	StoreWriter
	// Commit makes the new collection the live one and drops the old.
	Commit(ctx context.Context) error
	// Abort drops the new collection; the live one is unchanged.
	Abort(ctx context.Context) error
}

// Owner is the (app, user) that a document belongs to.
type Owner struct{ App, User string }

// Key names the owner by a hash (64 hex characters): usable where names
// allow few characters, such as a store's tenant names.
func (o Owner) Key() string { return hashid.Hex(o.App, o.User) }

// DocumentID is a document's ID in a store, a UUID derived from its owner,
// session and event: writing an event again replaces its document.
func DocumentID(o Owner, sessionID, eventID string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(hashid.Hex(o.App, o.User, sessionID, eventID))).String()
}

// StoredDoc is a document as a store keeps it.
type StoredDoc struct {
	Document
	Terms  []string  // the keyword terms, nil for a vector index
	Vector []float32 // nil for a keyword index
}

// StoreQuery is a search a store runs.
type StoreQuery struct {
	Terms  []string
	Vector []float32
	Limit  int
	// Filter: the store returns only documents it keeps, applying it
	// before ranking (the Limit best of the kept documents), and computes
	// BM25's statistics over all the owner's documents, as without it. Its
	// time bounds are Filter.Window's.
	Filter Filter
	// textsLater: a store that can give texts afterwards (textsLater) may
	// leave out the results' that are not brief (see briefText).
	textsLater bool
}

// textsLater is a store that can leave results' texts out of a search
// (StoreQuery.textsLater) and give them once the Index has cut the
// results to the few it returns: a search ranks a hundred or more
// candidates, and reading their texts was half of what one cost on a
// file of long turns. It drops a result whose document is gone since.
type textsLater interface {
	texts(ctx context.Context, o Owner, results []SearchResult) ([]SearchResult, error)
}

// ErrStoreUnavailable wraps errors of an external store that cannot be reached.
var ErrStoreUnavailable = errkind.New(errkind.Unavailable, "the index store is unavailable")
