package index

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"github.com/hectormem/hector/internal/hashid"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	chromem "github.com/philippgille/chromem-go"
)

// chromemStore keeps each (app, user)'s vectors in its own chromem-go
// collection, in memory. It is persisted through chromem's Export, never
// its NewPersistentDB, which names files by a 32-bit hash of the document
// ID and silently loses documents when two hashes collide.
type chromemStore struct {
	db  *chromem.DB
	gen atomic.Int64 // makes every collection name new, so a rebuild's never meets the live one's
}

func newChromemStore() *chromemStore { return &chromemStore{db: chromem.NewDB()} }

func (*chromemStore) name() string { return "chromem" }

// refuseToEmbed is every collection's embedding function: chromem must
// never embed on its own (its default calls OpenAI over the network).
func refuseToEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("index: chromem was asked to embed; Hector embeds documents itself")
}

func (c *chromemStore) newShard(o owner) (vectorShard, error) {
	name := hashid.Hex(o.app, o.user)[:32] + "-" + strconv.FormatInt(c.gen.Add(1), 10)
	coll, err := c.db.CreateCollection(name, map[string]string{"app": o.app, "user": o.user}, refuseToEmbed)
	if err != nil {
		return nil, fmt.Errorf("index: creating a chromem collection: %w", err)
	}
	return &chromemShard{coll}, nil
}

func (c *chromemStore) dropShard(s vectorShard) {
	c.db.DeleteCollection(s.(*chromemShard).coll.Name)
}

// chromemSnapshot is chromem's export plus which collection is whose:
// collection metadata does not survive chromem's export.
type chromemSnapshot struct {
	Owners  []collectionOwner
	Chromem []byte
}

type collectionOwner struct{ Collection, App, User string }

func (c *chromemStore) snapshot(shards map[owner]vectorShard) ([]byte, error) {
	var snap chromemSnapshot
	for o, s := range shards {
		snap.Owners = append(snap.Owners, collectionOwner{s.(*chromemShard).coll.Name, o.app, o.user})
	}
	if len(snap.Owners) > 0 {
		var names []string
		for _, co := range snap.Owners {
			names = append(names, co.Collection)
		}
		var buf bytes.Buffer
		if err := c.db.ExportToWriter(&buf, true, "", names...); err != nil {
			return nil, err
		}
		snap.Chromem = buf.Bytes()
	}
	var out bytes.Buffer
	err := gob.NewEncoder(&out).Encode(snap)
	return out.Bytes(), err
}

func (c *chromemStore) restore(payload []byte) (map[owner]vectorShard, error) {
	var snap chromemSnapshot
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&snap); err != nil {
		return nil, err
	}
	shards := map[owner]vectorShard{}
	if len(snap.Owners) == 0 {
		return shards, nil
	}
	if err := c.db.ImportFromReader(bytes.NewReader(snap.Chromem), ""); err != nil {
		return nil, err
	}
	for _, co := range snap.Owners {
		coll := c.db.GetCollection(co.Collection, refuseToEmbed) // import does not keep the embedding function
		if coll == nil {
			return nil, fmt.Errorf("index: the snapshot lacks collection %s", co.Collection)
		}
		shards[owner{co.App, co.User}] = &chromemShard{coll}
		// Keep new names clear of restored ones: CreateCollection replaces a namesake.
		if n, err := strconv.ParseInt(co.Collection[strings.LastIndexByte(co.Collection, '-')+1:], 10, 64); err == nil && n > c.gen.Load() {
			c.gen.Store(n)
		}
	}
	return shards, nil
}

type chromemShard struct{ coll *chromem.Collection }

func (s *chromemShard) upsert(ctx context.Context, docs []Document, vecs [][]float32) error {
	for i, d := range docs {
		err := s.coll.AddDocument(ctx, chromem.Document{
			ID:        hashid.Hex(d.SessionID, d.EventID),
			Content:   d.Text,
			Embedding: vecs[i],
			Metadata: map[string]string{
				"session": d.SessionID, "event": d.EventID, "author": d.Author, "role": d.Role,
				"seq": strconv.FormatInt(d.Seq, 10), "time": d.Timestamp.Format(time.RFC3339Nano),
			},
		})
		if err != nil {
			return fmt.Errorf("index: adding to chromem: %w", err)
		}
	}
	return nil
}

func (s *chromemShard) removeSession(ctx context.Context, sessionID string) error {
	return s.coll.Delete(ctx, map[string]string{"session": sessionID}, nil)
}

func (s *chromemShard) query(ctx context.Context, vec []float32, limit int) ([]SearchResult, error) {
	n := min(limit, s.coll.Count())
	if n == 0 {
		return nil, nil
	}
	found, err := s.coll.QueryEmbedding(ctx, vec, n, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("index: querying chromem: %w", err)
	}
	out := make([]SearchResult, len(found))
	for i, r := range found {
		out[i] = chromemResult(r)
	}
	return out, nil
}

func chromemResult(r chromem.Result) SearchResult {
	seq, _ := strconv.ParseInt(r.Metadata["seq"], 10, 64)
	ts, _ := time.Parse(time.RFC3339Nano, r.Metadata["time"])
	d := Document{SessionID: r.Metadata["session"], EventID: r.Metadata["event"], Seq: seq, Author: r.Metadata["author"],
		Role: r.Metadata["role"], Timestamp: ts, Text: r.Content}
	return d.result(float64(r.Similarity))
}
