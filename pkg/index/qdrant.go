package index

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
)

// QdrantConfig points a vector or hybrid index at a Qdrant server.
type QdrantConfig struct {
	Host string // default localhost
	Port int    // gRPC port, default 6334
	// APIKey, read from the environment; it never appears in errors or logs.
	APIKey string
	UseTLS bool
	// Collection holds every app's and user's points (default "hector_memory").
	Collection string
}

// WithQdrant stores a vector or hybrid index's vectors in Qdrant instead
// of in process. Persist the index's bookkeeping with WithSnapshot too.
func WithQdrant(cfg QdrantConfig) Option { return func(o *options) { o.qdrant = &cfg } }

// qdrantStore keeps every shard in one collection, told apart by payload
// fields with indexes on them: app, user, session and gen. Every query and
// delete filters on app and user. gen numbers a shard's builds: a rebuild
// writes a new generation beside the live one and the swap switches which
// generation queries ask for, so searches never see a half-built shard.
// Point IDs are derived from (app, user, session, event, gen), so writing
// an event again overwrites its point instead of adding one.
type qdrantStore struct {
	client     *qdrant.Client
	collection string
	mu         sync.Mutex
	gens       map[owner]int64 // the highest generation handed out per owner
}

func newQdrantStore(ctx context.Context, cfg QdrantConfig, dims int) (*qdrantStore, error) {
	if cfg.Collection == "" {
		cfg.Collection = "hector_memory"
	}
	client, err := qdrant.NewClient(&qdrant.Config{Host: cfg.Host, Port: cfg.Port, APIKey: cfg.APIKey, UseTLS: cfg.UseTLS, SkipCompatibilityCheck: true})
	if err != nil {
		return nil, fmt.Errorf("index: connecting to Qdrant at %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	s := &qdrantStore{client: client, collection: cfg.Collection, gens: map[owner]int64{}}
	if err := s.ensureCollection(ctx, dims); err != nil {
		client.Close()
		return nil, err
	}
	return s, nil
}

func (s *qdrantStore) ensureCollection(ctx context.Context, dims int) error {
	exists, err := s.client.CollectionExists(ctx, s.collection)
	if err != nil {
		return fmt.Errorf("index: Qdrant: %w", err)
	}
	if exists {
		info, err := s.client.GetCollectionInfo(ctx, s.collection)
		if err != nil {
			return fmt.Errorf("index: Qdrant: %w", err)
		}
		if size := info.GetConfig().GetParams().GetVectorsConfig().GetParams().GetSize(); size != uint64(dims) {
			return fmt.Errorf("%w: Qdrant collection %q holds vectors of %d dimensions and the embedder makes %d; use another collection or delete this one",
				ErrNeedsRebuild, s.collection, size, dims)
		}
	} else {
		err := s.client.CreateCollection(ctx, &qdrant.CreateCollection{
			CollectionName: s.collection,
			VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(dims), Distance: qdrant.Distance_Cosine}),
		})
		if err != nil {
			return fmt.Errorf("index: creating Qdrant collection %q: %w", s.collection, err)
		}
	}
	// Creating an index that exists is a no-op in Qdrant.
	for field, typ := range map[string]qdrant.FieldType{"app": qdrant.FieldType_FieldTypeKeyword, "user": qdrant.FieldType_FieldTypeKeyword,
		"session": qdrant.FieldType_FieldTypeKeyword, "gen": qdrant.FieldType_FieldTypeInteger} {
		_, err := s.client.CreateFieldIndex(ctx, &qdrant.CreateFieldIndexCollection{CollectionName: s.collection, FieldName: field, FieldType: typ.Enum(), Wait: ptr(true)})
		if err != nil {
			return fmt.Errorf("index: creating Qdrant payload index on %q: %w", field, err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (s *qdrantStore) name() string { return "qdrant/" + s.collection }

func (s *qdrantStore) newShard(o owner) (vectorShard, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens[o]++
	return &qdrantShard{s, o, s.gens[o]}, nil
}

func (s *qdrantStore) dropShard(v vectorShard) {
	sh := v.(*qdrantShard)
	// Best effort: a failure leaves unreachable points of an old generation, never wrong results.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.client.Delete(ctx, &qdrant.DeletePoints{CollectionName: s.collection, Wait: ptr(true),
		Points: qdrant.NewPointsSelectorFilter(&qdrant.Filter{Must: sh.scope()})})
}

type shardGen struct {
	App, User string
	Gen       int64
}

// The points live in Qdrant; a snapshot only says which generation is whose.
func (s *qdrantStore) snapshot(shards map[owner]vectorShard) ([]byte, error) {
	var gens []shardGen
	for o, v := range shards {
		gens = append(gens, shardGen{o.app, o.user, v.(*qdrantShard).gen})
	}
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(gens)
	return buf.Bytes(), err
}

func (s *qdrantStore) restore(payload []byte) (map[owner]vectorShard, error) {
	var gens []shardGen
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&gens); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shards := map[owner]vectorShard{}
	for _, g := range gens {
		o := owner{g.App, g.User}
		shards[o] = &qdrantShard{s, o, g.Gen}
		s.gens[o] = max(s.gens[o], g.Gen)
	}
	return shards, nil
}

type qdrantShard struct {
	s   *qdrantStore
	o   owner
	gen int64
}

// scope is the filter every request of this shard carries.
func (sh *qdrantShard) scope() []*qdrant.Condition {
	return []*qdrant.Condition{qdrant.NewMatch("app", sh.o.app), qdrant.NewMatch("user", sh.o.user), qdrant.NewMatchInt("gen", sh.gen)}
}

func (sh *qdrantShard) pointID(d Document) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(hashHex(sh.o.app, sh.o.user, d.SessionID, d.EventID, strconv.FormatInt(sh.gen, 10)))).String()
}

func (sh *qdrantShard) upsert(ctx context.Context, docs []Document, vecs [][]float32) error {
	points := make([]*qdrant.PointStruct, len(docs))
	for i, d := range docs {
		points[i] = &qdrant.PointStruct{
			Id:      qdrant.NewIDUUID(sh.pointID(d)),
			Vectors: qdrant.NewVectorsDense(vecs[i]),
			Payload: qdrant.NewValueMap(map[string]any{
				"app": sh.o.app, "user": sh.o.user, "gen": sh.gen, "session": d.SessionID, "event": d.EventID,
				"author": d.Author, "role": d.Role, "seq": d.Seq, "time": d.Timestamp.Format(time.RFC3339Nano), "text": d.Text,
			}),
		}
	}
	_, err := sh.s.client.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: sh.s.collection, Wait: ptr(true), Points: points})
	if err != nil {
		return fmt.Errorf("index: writing to Qdrant: %w", err)
	}
	return nil
}

func (sh *qdrantShard) removeSession(ctx context.Context, sessionID string) error {
	_, err := sh.s.client.Delete(ctx, &qdrant.DeletePoints{CollectionName: sh.s.collection, Wait: ptr(true),
		Points: qdrant.NewPointsSelectorFilter(&qdrant.Filter{Must: append(sh.scope(), qdrant.NewMatch("session", sessionID))})})
	if err != nil {
		return fmt.Errorf("index: deleting from Qdrant: %w", err)
	}
	return nil
}

func (sh *qdrantShard) query(ctx context.Context, vec []float32, limit int) ([]SearchResult, error) {
	points, err := sh.s.client.Query(ctx, &qdrant.QueryPoints{
		CollectionName: sh.s.collection,
		Query:          qdrant.NewQueryDense(vec),
		Filter:         &qdrant.Filter{Must: sh.scope()},
		Limit:          ptr(uint64(limit)),
		WithPayload:    qdrant.NewWithPayload(true),
	})
	if err != nil {
		return nil, fmt.Errorf("index: searching Qdrant: %w", err)
	}
	out := make([]SearchResult, 0, len(points))
	for _, p := range points {
		pl := p.GetPayload()
		// Qdrant filtered on these already; checking again costs nothing and
		// keeps a misbehaving server from leaking another user's memory.
		if pl["app"].GetStringValue() != sh.o.app || pl["user"].GetStringValue() != sh.o.user {
			return nil, fmt.Errorf("index: Qdrant returned a point outside the requested scope")
		}
		ts, _ := time.Parse(time.RFC3339Nano, pl["time"].GetStringValue())
		d := Document{SessionID: pl["session"].GetStringValue(), EventID: pl["event"].GetStringValue(), Seq: pl["seq"].GetIntegerValue(),
			Author: pl["author"].GetStringValue(), Role: pl["role"].GetStringValue(), Timestamp: ts, Text: pl["text"].GetStringValue()}
		out = append(out, d.result(float64(p.GetScore())))
	}
	return out, nil
}
