package index

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/philippgille/chromem-go"
)

// chromemStore keeps each (app, user)'s vectors in a chromem-go collection
// of its own, in memory; the index's snapshot holds chromem-go's own export
// of each (its on-disk mode loses documents whose IDs collide in a 32-bit
// hash, so it is not used). It is exact, like the flat store, and slower:
// BenchmarkVectorStores has the figures, and the flat store stays the
// default.
type chromemStore struct{}

func (*chromemStore) name() string { return "chromem" }

// chromemCollection is the one collection of each shard's database.
const chromemCollection = "memory"

func (*chromemStore) newShard(owner) (vectorShard, error) {
	db := chromem.NewDB()
	c, err := db.CreateCollection(chromemCollection, nil, refuseToEmbed)
	if err != nil {
		return nil, err
	}
	return &chromemShard{db: db, c: c}, nil
}

func (*chromemStore) dropShard(vectorShard) {}

// refuseToEmbed is the collection's embedding function. Hector embeds every
// document and query itself; without a function of its own, chromem-go
// would fall back to calling OpenAI over the network.
func refuseToEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("index: chromem-go was asked to embed a text; Hector embeds them itself")
}

type chromemSnapshot struct {
	App, User string
	Dims      int
	Export    []byte // chromem-go's export of the shard's database
}

func (*chromemStore) snapshot(shards map[owner]vectorShard) ([]byte, error) {
	var snaps []chromemSnapshot
	for o, s := range shards {
		cs := s.(*chromemShard)
		var buf bytes.Buffer
		cs.mu.RLock()
		err := cs.db.ExportToWriter(&buf, false, "")
		dims := cs.dims
		cs.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, chromemSnapshot{App: o.app, User: o.user, Dims: dims, Export: buf.Bytes()})
	}
	return gobBytes(snaps)
}

func (*chromemStore) restore(payload []byte) (map[owner]vectorShard, error) {
	var snaps []chromemSnapshot
	if err := fromGob(payload, &snaps); err != nil {
		return nil, err
	}
	shards := make(map[owner]vectorShard, len(snaps))
	for _, sn := range snaps {
		db := chromem.NewDB()
		if err := db.ImportFromReader(bytes.NewReader(sn.Export), ""); err != nil {
			return nil, err
		}
		c := db.GetCollection(chromemCollection, refuseToEmbed)
		if c == nil {
			return nil, errors.New("index: a chromem-go export without its collection")
		}
		shards[owner{sn.App, sn.User}] = &chromemShard{db: db, c: c, dims: sn.Dims}
	}
	return shards, nil
}

type chromemShard struct {
	mu   sync.RWMutex // dims, and the export's consistency with them
	db   *chromem.DB
	c    *chromem.Collection
	dims int
}

// chromemID is a document's ID in its collection: one per event.
func chromemID(d Document) string { return d.SessionID + "\x00" + d.EventID }

func (s *chromemShard) upsert(ctx context.Context, docs []Document, vecs [][]float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range docs {
		if err := fitDims(&s.dims, vecs[i]); err != nil {
			return err
		}
		if isZero(vecs[i]) { // matches nothing, and chromem-go would divide by its length
			if err := s.c.Delete(ctx, nil, nil, chromemID(d)); err != nil {
				return err
			}
			continue
		}
		meta := map[string]string{"session_id": d.SessionID, "event_id": d.EventID, "seq": strconv.FormatInt(d.Seq, 10),
			"author": d.Author, "role": d.Role, "time_ns": strconv.FormatInt(d.Timestamp.UnixNano(), 10)}
		doc := chromem.Document{ID: chromemID(d), Metadata: meta, Embedding: vecs[i], Content: d.Text}
		if err := s.c.AddDocument(ctx, doc); err != nil {
			return err
		}
	}
	return nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func (s *chromemShard) removeSession(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Delete(ctx, map[string]string{"session_id": sessionID}, nil)
}

func (s *chromemShard) query(ctx context.Context, vec []float32, limit int) ([]SearchResult, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := min(limit, s.c.Count()) // chromem-go refuses to be asked for more than it holds
	if n <= 0 {
		return nil, nil
	}
	if len(vec) != s.dims {
		return nil, errDims(len(vec), s.dims)
	}
	if isZero(vec) {
		return nil, nil
	}
	found, err := s.c.QueryEmbedding(ctx, vec, n, nil, nil)
	if err != nil {
		return nil, err
	}
	out := make([]SearchResult, len(found))
	for i, r := range found {
		seq, _ := strconv.ParseInt(r.Metadata["seq"], 10, 64)
		ns, _ := strconv.ParseInt(r.Metadata["time_ns"], 10, 64)
		d := Document{SessionID: r.Metadata["session_id"], EventID: r.Metadata["event_id"], Seq: seq, Author: r.Metadata["author"],
			Role: r.Metadata["role"], Timestamp: time.Unix(0, ns).UTC(), Text: r.Content}
		out[i] = d.Result(float64(r.Similarity))
	}
	return out, nil
}
