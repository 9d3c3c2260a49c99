package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

func (chromemStore) name() string { return "chromem" }

// chromemCollection is the one collection of each shard's database.
const chromemCollection = "memory"

func (chromemStore) newShard() (vectorShard, error) {
	db := chromem.NewDB()
	c, err := db.CreateCollection(chromemCollection, nil, refuseToEmbed)
	if err != nil {
		return nil, err
	}
	return &chromemShard{db: db, c: c, ids: map[eventKey]bool{}}, nil
}

// refuseToEmbed is the collection's embedding function. Hector embeds every
// document and query itself; without a function of its own, chromem-go
// would fall back to calling OpenAI over the network.
func refuseToEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("index: chromem-go was asked to embed a text; Hector embeds them itself")
}

type chromemSnapshot struct {
	Dims   int
	Export []byte      // chromem-go's export of the shard's database
	Keys   [][2]string // the (session, event) of each document, which chromem-go cannot list
}

func (s *chromemShard) export() ([]byte, error) {
	var buf bytes.Buffer
	s.mu.RLock()
	err := s.db.ExportToWriter(&buf, false, "")
	sn := chromemSnapshot{Dims: s.dims, Export: buf.Bytes()}
	for k := range s.ids {
		sn.Keys = append(sn.Keys, [2]string{k.session, k.event})
	}
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return gobBytes(sn)
}

func (chromemStore) restore(payload []byte) (vectorShard, error) {
	var sn chromemSnapshot
	if err := fromGob(payload, &sn); err != nil {
		return nil, err
	}
	db := chromem.NewDB()
	if err := db.ImportFromReader(bytes.NewReader(sn.Export), ""); err != nil {
		return nil, err
	}
	c := db.GetCollection(chromemCollection, refuseToEmbed)
	if c == nil {
		return nil, errors.New("index: a chromem-go export without its collection")
	}
	if c.Count() != len(sn.Keys) {
		return nil, fmt.Errorf("index: a chromem-go export of %d documents listing %d", c.Count(), len(sn.Keys))
	}
	s := &chromemShard{db: db, c: c, dims: sn.Dims, ids: make(map[eventKey]bool, len(sn.Keys))}
	for _, k := range sn.Keys {
		s.ids[eventKey{k[0], k[1]}] = true
	}
	return s, nil
}

type chromemShard struct {
	mu   sync.RWMutex // dims and ids, and the export's consistency with them
	db   *chromem.DB
	c    *chromem.Collection
	dims int
	ids  map[eventKey]bool // the documents it holds
}

// chromemID is a document's ID in its collection: one per event.
func chromemID(d Document) string { return d.SessionID + "\x00" + d.EventID }

func (s *chromemShard) upsert(ctx context.Context, docs []StoredDoc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sd := range docs {
		d, vec := sd.Document, sd.Vector
		if err := fitDims(&s.dims, vec); err != nil {
			return err
		}
		key := eventKey{d.SessionID, d.EventID}
		if isZero(vec) { // matches nothing, and chromem-go would divide by its length
			if err := s.c.Delete(ctx, nil, nil, chromemID(d)); err != nil {
				return err
			}
			delete(s.ids, key)
			continue
		}
		meta := map[string]string{"session_id": d.SessionID, "event_id": d.EventID, "seq": strconv.FormatInt(d.Seq, 10),
			"author": d.Author, "role": d.Role, "time_ns": strconv.FormatInt(d.Timestamp.UnixNano(), 10)}
		doc := chromem.Document{ID: chromemID(d), Metadata: meta, Embedding: vec, Content: d.Text}
		if err := s.c.AddDocument(ctx, doc); err != nil {
			return err
		}
		s.ids[key] = true
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

func (s *chromemShard) has(key eventKey) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ids[key]
}

// removeWhere asks drop of each document's session and event only.
func (s *chromemShard) removeWhere(ctx context.Context, drop func(*Document) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for k := range s.ids {
		d := Document{SessionID: k.session, EventID: k.event}
		if drop(&d) {
			gone = append(gone, chromemID(d))
			delete(s.ids, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return s.c.Delete(ctx, nil, nil, gone...)
}

func (s *chromemShard) query(ctx context.Context, vec []float32, limit int, f Filter) ([]SearchResult, error) {
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
	// chromem-go filters by equal metadata only: time bounds are applied
	// here, to every document the rest of the filter keeps.
	where := map[string]string{}
	for key, value := range map[string]string{"session_id": f.SessionID, "author": f.Author, "role": f.Role} {
		if value != "" {
			where[key] = value
		}
	}
	timed := !f.After.IsZero() || !f.Before.IsZero()
	if timed {
		n = s.c.Count()
	}
	found, err := s.c.QueryEmbedding(ctx, vec, n, where, nil)
	if err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(found))
	for _, r := range found {
		seq, _ := strconv.ParseInt(r.Metadata["seq"], 10, 64)
		ns, _ := strconv.ParseInt(r.Metadata["time_ns"], 10, 64)
		d := Document{SessionID: r.Metadata["session_id"], EventID: r.Metadata["event_id"], Seq: seq, Author: r.Metadata["author"],
			Role: r.Metadata["role"], Timestamp: time.Unix(0, ns).UTC(), Text: r.Content}
		if timed && !f.Keeps(&d) {
			continue
		}
		if out = append(out, d.Result(float64(r.Similarity))); len(out) == limit {
			break
		}
	}
	return out, nil
}
