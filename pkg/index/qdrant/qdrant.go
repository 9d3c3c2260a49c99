// Package qdrant keeps a Hector index in Qdrant, through its official Go
// client. Every point carries what the index type needs:
//
//   - keyword: a sparse vector "terms" of Hector's own terms, each weighted
//     by BM25's term-frequency part; the collection's IDF modifier has
//     Qdrant supply the inverse document frequency at query time;
//   - vector: a dense vector "dense" from Hector's embedder (Qdrant
//     vectorizes nothing), compared by cosine;
//   - hybrid: both, searched as two queries that Hector fuses as it does
//     for every store.
//
// Isolation: every point carries its owner's key (a hash of app and user),
// indexed as Qdrant's tenant field, and every query, scroll and delete
// filters on it, so Qdrant co-locates a user's points and a request cannot
// reach another user's. One collection per user would cost Qdrant far more
// per tenant; payload partitioning is what Qdrant recommends for many
// tenants. Every result's app and user are checked again anyway, so a
// misbehaving server cannot leak another user's memory.
//
// Keyword scores differ from the in-process BM25 in two ways Qdrant
// imposes: the document frequencies are the whole collection's, not one
// user's, and a document's length is weighed against a fixed typical
// length, as Qdrant keeps no average.
//
// Rebuilds: the configured name is an alias pointing at a physical
// collection <name>_g<n>. A full rebuild fills <name>_g<n+1> and switches
// the alias in one atomic request, so searches never see a half-built
// collection. The collection's metadata records the fingerprint of how its
// documents were made; metadata and RRF's constant need Qdrant 1.16 or later.
package qdrant

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hectormem/hector/pkg/index"
)

// Config points at a Qdrant server.
type Config struct {
	Host string // default localhost
	Port int    // gRPC port, default 6334
	// APIKey, read from the environment; it never appears in errors or logs.
	APIKey string
	UseTLS bool
	// Collection is the alias every replica uses (default "hector_memory").
	Collection string
}

// DefaultCollection is the collection name when the config gives none.
const DefaultCollection = "hector_memory"

const (
	denseVector  = "dense"
	sparseVector = "terms"
	// fingerprintKey names the collection metadata holding the fingerprint.
	fingerprintKey = "hector_fingerprint"
	batchSize      = 256
)

// BM25's usual parameters, as in process, and the document length that
// stands in for the average Qdrant does not keep: a chat message runs to a
// couple of dozen terms.
const (
	bm25K1        = 1.2
	bm25B         = 0.75
	typicalLength = 20
)

// Store is an index.Store on Qdrant.
type Store struct {
	client *qc.Client
	addr   string
	alias  string
}

var _ index.Store = (*Store)(nil)

// New returns a store for cfg; it connects on first use.
func New(cfg Config) (*Store, error) {
	if cfg.Host == "" {
		cfg.Host = "localhost"
	}
	if cfg.Port == 0 {
		cfg.Port = 6334
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("%w: Qdrant port %d is not a port number", index.ErrInvalidArgument, cfg.Port)
	}
	if cfg.Collection == "" {
		cfg.Collection = DefaultCollection
	}
	if !validName(cfg.Collection) {
		return nil, fmt.Errorf("%w: Qdrant collection %q must hold only letters, digits, _ and -", index.ErrInvalidArgument, cfg.Collection)
	}
	client, err := qc.NewClient(&qc.Config{Host: cfg.Host, Port: cfg.Port, APIKey: cfg.APIKey, UseTLS: cfg.UseTLS, SkipCompatibilityCheck: true, PoolSize: 1})
	if err != nil {
		return nil, fmt.Errorf("connecting to Qdrant at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return &Store{client: client, addr: cfg.Host + ":" + strconv.Itoa(cfg.Port), alias: cfg.Collection}, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func (s *Store) Name() string { return "qdrant at " + s.addr + ", collection " + s.alias }

func (s *Store) Ready(ctx context.Context) error {
	_, err := s.client.HealthCheck(ctx)
	return err
}

func (s *Store) Close() error { return s.client.Close() }

func (s *Store) Open(ctx context.Context, schema index.Schema) error {
	live, err := s.liveCollection(ctx)
	if err != nil {
		return err
	}
	if live == "" {
		legacy, err := s.client.CollectionExists(ctx, s.alias)
		if err != nil {
			return err
		}
		if legacy {
			return fmt.Errorf("%w: Qdrant collection %s holds vectors only, as older versions of Hector made it", index.ErrNeedsRebuild, s.alias)
		}
		// First start: make generation 1 and point the alias at it. Another
		// replica doing the same at once is fine: both end up on one collection.
		live = s.alias + "_g1"
		if err := s.create(ctx, live, schema); err != nil {
			return err
		}
		if err := s.client.CreateAlias(ctx, s.alias, live); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating alias %s: %w", s.alias, err)
		}
		if live, err = s.liveCollection(ctx); err != nil {
			return err
		}
	}
	info, err := s.client.GetCollectionInfo(ctx, live)
	if err != nil {
		return fmt.Errorf("reading collection %s: %w", live, err)
	}
	if got := info.GetConfig().GetMetadata()[fingerprintKey].GetStringValue(); got != schema.Fingerprint {
		return fmt.Errorf("%w: Qdrant collection %s was built by %q and this configuration makes %q", index.ErrNeedsRebuild, s.alias, got, schema.Fingerprint)
	}
	if slices.ContainsFunc(payloadIndexes, func(ix payloadIndex) bool { return info.GetPayloadSchema()[ix.field] == nil }) {
		return s.indexPayload(ctx, live)
	}
	return nil
}

// liveCollection is the physical collection the alias points at, "" if none.
func (s *Store) liveCollection(ctx context.Context) (string, error) {
	aliases, err := s.client.ListAliases(ctx)
	if err != nil {
		return "", fmt.Errorf("reading aliases: %w", err)
	}
	for _, a := range aliases {
		if a.GetAliasName() == s.alias {
			return a.GetCollectionName(), nil
		}
	}
	return "", nil
}

func alreadyExists(err error) bool {
	return status.Code(errors.Unwrap(err)) == codes.AlreadyExists || err != nil && strings.Contains(err.Error(), "already exists")
}

func (s *Store) create(ctx context.Context, name string, schema index.Schema) error {
	req := &qc.CreateCollection{
		CollectionName: name,
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
			sparseVector: {Modifier: qc.Modifier_Idf.Enum()},
		}),
		Metadata: qc.NewValueMap(map[string]any{fingerprintKey: schema.Fingerprint}),
	}
	if schema.Dimensions > 0 {
		req.VectorsConfig = qc.NewVectorsConfigMap(map[string]*qc.VectorParams{
			denseVector: {Size: uint64(schema.Dimensions), Distance: qc.Distance_Cosine},
		})
	}
	if err := s.client.CreateCollection(ctx, req); err != nil && !alreadyExists(err) {
		return fmt.Errorf("creating collection %s: %w", name, err)
	}
	return s.indexPayload(ctx, name)
}

// payloadIndexes are the payload fields that requests filter by, with
// their index types. Qdrant may refuse a filter on a field with no index
// (its strict mode, on by default in Qdrant Cloud).
var payloadIndexes = []payloadIndex{
	{"owner", qc.FieldType_FieldTypeKeyword}, {"session", qc.FieldType_FieldTypeKeyword},
	{"author", qc.FieldType_FieldTypeKeyword}, {"role", qc.FieldType_FieldTypeKeyword}, {"time", qc.FieldType_FieldTypeDatetime},
}

type payloadIndex struct {
	field string
	typ   qc.FieldType
}

// indexPayload makes the payload indexes, on a new collection and on one
// made before a field was filtered by (indexing a field again is a no-op).
func (s *Store) indexPayload(ctx context.Context, name string) error {
	for _, ix := range payloadIndexes {
		req := &qc.CreateFieldIndexCollection{CollectionName: name, FieldName: ix.field, FieldType: ix.typ.Enum(), Wait: ptr(true)}
		if ix.typ == qc.FieldType_FieldTypeKeyword {
			// The owner is the tenant: Qdrant keeps each one's points together.
			req.FieldIndexParams = qc.NewPayloadIndexParamsKeyword(&qc.KeywordIndexParams{IsTenant: ptr(ix.field == "owner")})
		}
		if _, err := s.client.CreateFieldIndex(ctx, req); err != nil {
			return fmt.Errorf("indexing %s's payload field %q: %w", name, ix.field, err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// scope is the filter of every request about the owner's points.
func scope(o index.Owner, more ...*qc.Condition) *qc.Filter {
	return &qc.Filter{Must: append([]*qc.Condition{qc.NewMatch("owner", o.Key())}, more...)}
}

func (s *Store) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return s.write(ctx, s.alias, o, docs)
}

func (s *Store) write(ctx context.Context, collection string, o index.Owner, docs []index.StoredDoc) error {
	for len(docs) > 0 {
		n := min(len(docs), batchSize)
		points := make([]*qc.PointStruct, n)
		for i, d := range docs[:n] {
			vectors := map[string]*qc.Vector{}
			if d.Vector != nil {
				vectors[denseVector] = qc.NewVectorDense(d.Vector)
			}
			if d.Terms != nil {
				vectors[sparseVector] = qc.NewVectorSparse(documentTerms(d.Terms))
			}
			points[i] = &qc.PointStruct{
				Id:      qc.NewID(index.DocumentID(o, d.SessionID, d.EventID)),
				Vectors: qc.NewVectorsMap(vectors),
				Payload: qc.NewValueMap(map[string]any{
					"owner": o.Key(), "app": o.App, "user": o.User, "session": d.SessionID, "event": d.EventID,
					"author": d.Author, "role": d.Role, "seq": d.Seq, "time": d.Timestamp.Format(time.RFC3339Nano), "text": d.Text,
				}),
			}
		}
		// Wait: an append is searchable once its request has returned.
		if _, err := s.client.Upsert(ctx, &qc.UpsertPoints{CollectionName: collection, Wait: ptr(true), Points: points}); err != nil {
			return err
		}
		docs = docs[n:]
	}
	return nil
}

// termIndex is a term's dimension in the sparse vectors. Two terms that
// hash alike share one, which only blurs their two scores.
func termIndex(term string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(term))
	return h.Sum32()
}

// documentTerms weighs each of a document's terms by BM25's term-frequency
// part; Qdrant multiplies in the IDF.
func documentTerms(terms []string) ([]uint32, []float32) {
	tf := map[uint32]float64{}
	for _, t := range terms {
		tf[termIndex(t)]++
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(len(terms))/typicalLength)
	indices := slices.Sorted(maps.Keys(tf))
	values := make([]float32, len(indices))
	for i, ix := range indices {
		values[i] = float32(tf[ix] * (bm25K1 + 1) / (tf[ix] + norm))
	}
	return indices, values
}

// queryTerms is a query's sparse vector: each distinct term once, as the
// in-process BM25 counts them.
func queryTerms(terms []string) ([]uint32, []float32) {
	seen := map[uint32]bool{}
	for _, t := range terms {
		seen[termIndex(t)] = true
	}
	indices := slices.Sorted(maps.Keys(seen))
	values := make([]float32, len(indices))
	for i := range values {
		values[i] = 1
	}
	return indices, values
}

func (s *Store) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return s.deleteWhere(ctx, s.alias, scope(o, qc.NewMatch("session", sessionID)))
}

func (s *Store) deleteWhere(ctx context.Context, collection string, f *qc.Filter) error {
	_, err := s.client.Delete(ctx, &qc.DeletePoints{CollectionName: collection, Wait: ptr(true), Points: qc.NewPointsSelectorFilter(f)})
	return err
}

func (s *Store) Missing(ctx context.Context, o index.Owner, sessionID string, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	// A document's ID is derived from its event: ask which IDs exist.
	ids := make([]*qc.PointId, len(eventIDs))
	for i, e := range eventIDs {
		ids[i] = qc.NewID(index.DocumentID(o, sessionID, e))
	}
	have := map[string]bool{}
	for i := 0; i < len(ids); i += batchSize {
		batch := ids[i:min(i+batchSize, len(ids))]
		points, err := s.client.Scroll(ctx, &qc.ScrollPoints{
			CollectionName: s.alias, Filter: scope(o, qc.NewMatch("session", sessionID), qc.NewHasID(batch...)),
			Limit: ptr(uint32(len(batch))), WithPayload: qc.NewWithPayload(false),
		})
		if err != nil {
			return nil, err
		}
		for _, p := range points {
			have[p.GetId().GetUuid()] = true
		}
	}
	var missing []string
	for i, e := range eventIDs {
		if !have[ids[i].GetUuid()] {
			missing = append(missing, e)
		}
	}
	return missing, nil
}

func (s *Store) Search(ctx context.Context, o index.Owner, q index.StoreQuery) ([]index.SearchResult, error) {
	req := &qc.QueryPoints{CollectionName: s.alias, Filter: scope(o, conditions(q.Filter)...), Limit: ptr(uint64(q.Limit)), WithPayload: qc.NewWithPayload(true)}
	if q.Vector != nil {
		req.Query, req.Using = qc.NewQueryDense(q.Vector), ptr(denseVector)
	} else {
		req.Query, req.Using = qc.NewQuerySparse(queryTerms(q.Terms)), ptr(sparseVector)
	}
	return s.query(ctx, o, req)
}

// conditions are the payload conditions that keep what f keeps.
func conditions(f index.Filter) []*qc.Condition {
	var out []*qc.Condition
	for field, value := range map[string]string{"session": f.SessionID, "author": f.Author, "role": f.Role} {
		if value != "" {
			out = append(out, qc.NewMatchKeyword(field, value))
		}
	}
	if from, to := f.Window(); !from.IsZero() || !to.IsZero() {
		r := &qc.DatetimeRange{}
		if !from.IsZero() {
			r.Gte = timestamppb.New(from)
		}
		if !to.IsZero() {
			r.Lte = timestamppb.New(to)
		}
		out = append(out, qc.NewDatetimeRange("time", r))
	}
	return out
}

func (s *Store) query(ctx context.Context, o index.Owner, req *qc.QueryPoints) ([]index.SearchResult, error) {
	points, err := s.client.Query(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]index.SearchResult, 0, len(points))
	for _, p := range points {
		pl := p.GetPayload()
		if pl["app"].GetStringValue() != o.App || pl["user"].GetStringValue() != o.User {
			return nil, errors.New("the Qdrant server returned a point outside the requested (app, user)")
		}
		ts, _ := time.Parse(time.RFC3339Nano, pl["time"].GetStringValue())
		d := index.Document{SessionID: pl["session"].GetStringValue(), EventID: pl["event"].GetStringValue(), Seq: pl["seq"].GetIntegerValue(),
			Author: pl["author"].GetStringValue(), Role: pl["role"].GetStringValue(), Timestamp: ts, Text: pl["text"].GetStringValue()}
		out = append(out, d.Result(float64(p.GetScore())))
	}
	return out, nil
}

func (s *Store) Prune(ctx context.Context, o index.Owner, keep func(sessionID, eventID string) bool) error {
	var drop []*qc.PointId
	var offset *qc.PointId
	for {
		points, next, err := s.client.ScrollAndOffset(ctx, &qc.ScrollPoints{
			CollectionName: s.alias, Filter: scope(o), Offset: offset, Limit: ptr(uint32(500)),
			WithPayload: qc.NewWithPayloadInclude("session", "event"),
		})
		if err != nil {
			return err
		}
		for _, p := range points {
			if !keep(p.GetPayload()["session"].GetStringValue(), p.GetPayload()["event"].GetStringValue()) {
				drop = append(drop, p.GetId())
			}
		}
		if next == nil {
			break
		}
		offset = next
	}
	for len(drop) > 0 {
		n := min(len(drop), batchSize)
		if err := s.deleteWhere(ctx, s.alias, scope(o, qc.NewHasID(drop[:n]...))); err != nil {
			return err
		}
		drop = drop[n:]
	}
	return nil
}

// Begin makes the next generation's collection.
func (s *Store) Begin(ctx context.Context, schema index.Schema) (index.StoreBuild, error) {
	live, err := s.liveCollection(ctx)
	if err != nil {
		return nil, err
	}
	gen := 1
	if i := strings.LastIndex(live, "_g"); i >= 0 {
		if n, err := strconv.Atoi(live[i+2:]); err == nil {
			gen = n + 1
		}
	}
	next := s.alias + "_g" + strconv.Itoa(gen)
	// A rebuild that died before committing may have left this one behind.
	if err := s.drop(ctx, next); err != nil {
		return nil, fmt.Errorf("dropping the unfinished collection %s: %w", next, err)
	}
	if err := s.create(ctx, next, schema); err != nil {
		return nil, err
	}
	return &build{s: s, collection: next, old: live}, nil
}

// drop deletes a collection if it exists.
func (s *Store) drop(ctx context.Context, name string) error {
	exists, err := s.client.CollectionExists(ctx, name)
	if err != nil || !exists {
		return err
	}
	return s.client.DeleteCollection(ctx, name)
}

type build struct {
	s               *Store
	collection, old string
}

func (b *build) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return b.s.write(ctx, b.collection, o, docs)
}

func (b *build) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return b.s.deleteWhere(ctx, b.collection, scope(o, qc.NewMatch("session", sessionID)))
}

// Commit switches the alias in one request, which Qdrant applies atomically.
func (b *build) Commit(ctx context.Context) error {
	var actions []*qc.AliasOperations
	if b.old != "" {
		actions = append(actions, qc.NewAliasDelete(b.s.alias))
	} else if err := b.s.drop(ctx, b.s.alias); err != nil { // an older Hector's collection, in the alias's way
		return fmt.Errorf("dropping the old collection %s: %w", b.s.alias, err)
	}
	actions = append(actions, qc.NewAliasCreate(b.s.alias, b.collection))
	if err := b.s.client.UpdateAliases(ctx, actions); err != nil {
		return fmt.Errorf("switching alias %s to %s: %w", b.s.alias, b.collection, err)
	}
	if b.old != "" {
		// Best effort: a leftover old generation costs disk, never results.
		_ = b.s.drop(ctx, b.old)
	}
	return nil
}

func (b *build) Abort(ctx context.Context) error { return b.s.drop(ctx, b.collection) }

// Drop deletes the collection: its alias and every generation.
func (s *Store) Drop(ctx context.Context) error {
	live, err := s.liveCollection(ctx)
	if err != nil || live == "" {
		return err
	}
	if err := s.client.DeleteAlias(ctx, s.alias); err != nil {
		return err
	}
	return s.drop(ctx, live)
}
