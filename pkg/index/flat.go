package index

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
)

// flatStore keeps each (app, user)'s vectors in one contiguous slice,
// normalised when added, and answers a query by exact cosine similarity
// over them all: one pass over memory in order, a dot product per vector,
// and a heap of the best. For one user's memory (thousands to a hundred
// thousand messages) that is faster than chromem-go's exact search (which
// keeps documents in a map and sorts every score) and loses nothing, where
// an approximate index would trade recall and build time for a scale one
// user does not reach. BenchmarkVectorStores has the figures.
type flatStore struct{}

func (flatStore) name() string { return "flat" }

func (flatStore) newShard() (vectorShard, error) {
	return &flatShard{byEvent: map[eventKey]int{}}, nil
}

type flatSnapshot struct {
	Dims int
	Docs []Document
	Vecs []float32
}

func (s *flatShard) export() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return gobBytes(flatSnapshot{Dims: s.dims, Docs: s.docs, Vecs: s.vecs})
}

func (flatStore) restore(payload []byte) (vectorShard, error) {
	var sn flatSnapshot
	if err := fromGob(payload, &sn); err != nil {
		return nil, err
	}
	if len(sn.Vecs) != len(sn.Docs)*sn.Dims {
		return nil, fmt.Errorf("index: a flat snapshot of %d documents holding %d numbers at %d dimensions", len(sn.Docs), len(sn.Vecs), sn.Dims)
	}
	f := &flatShard{dims: sn.Dims, docs: sn.Docs, vecs: sn.Vecs, byEvent: make(map[eventKey]int, len(sn.Docs))}
	for i, d := range f.docs {
		f.byEvent[eventKey{d.SessionID, d.EventID}] = i
	}
	return f, nil
}

type flatShard struct {
	mu      sync.RWMutex
	dims    int
	docs    []Document
	vecs    []float32 // row i holds docs[i]'s unit vector
	byEvent map[eventKey]int
}

// unit writes v scaled to length 1 into dst (zeros stay zeros).
func unit(dst, v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	scale := float32(0)
	if sum > 0 {
		scale = float32(1 / math.Sqrt(sum))
	}
	for i, x := range v {
		dst[i] = x * scale
	}
}

func (s *flatShard) upsert(ctx context.Context, docs []StoredDoc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sd := range docs {
		d := sd.Document
		if err := fitDims(&s.dims, sd.Vector); err != nil {
			return err
		}
		key := eventKey{d.SessionID, d.EventID}
		at, ok := s.byEvent[key]
		if !ok {
			at = len(s.docs)
			s.docs = append(s.docs, d)
			s.vecs = append(s.vecs, make([]float32, s.dims)...)
			s.byEvent[key] = at
		}
		s.docs[at] = d
		unit(s.vecs[at*s.dims:(at+1)*s.dims], sd.Vector)
	}
	return nil
}

// fitDims sets a shard's dimensions from its first vector and refuses a
// vector of any other.
func fitDims(dims *int, v []float32) error {
	if *dims == 0 {
		*dims = len(v)
	}
	if len(v) != *dims {
		return errDims(len(v), *dims)
	}
	return nil
}

func errDims(got, want int) error {
	return fmt.Errorf("index: a vector of %d dimensions in a shard of %d", got, want)
}

func (s *flatShard) has(key eventKey) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.byEvent[key]
	return ok
}

func (s *flatShard) removeWhere(ctx context.Context, drop func(*Document) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := 0
	for i, d := range s.docs {
		if drop(&d) {
			delete(s.byEvent, eventKey{d.SessionID, d.EventID})
			continue
		}
		if kept != i {
			s.docs[kept] = d
			copy(s.vecs[kept*s.dims:(kept+1)*s.dims], s.vecs[i*s.dims:(i+1)*s.dims])
			s.byEvent[eventKey{d.SessionID, d.EventID}] = kept
		}
		kept++
	}
	clear(s.docs[kept:]) // let the removed documents' text go
	s.docs, s.vecs = s.docs[:kept], s.vecs[:kept*s.dims]
	return nil
}

func (s *flatShard) query(ctx context.Context, vec []float32, limit int, f Filter) ([]SearchResult, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.docs) == 0 || limit <= 0 {
		return nil, nil
	}
	if len(vec) != s.dims {
		return nil, errDims(len(vec), s.dims)
	}
	q := make([]float32, s.dims)
	unit(q, vec)
	best := make(scoreHeap, 0, limit)
	filtered := !f.IsZero()
	for i := range s.docs {
		if filtered && !f.Keeps(&s.docs[i]) {
			continue
		}
		score := dot(q, s.vecs[i*s.dims:(i+1)*s.dims])
		switch {
		case len(best) < limit:
			heap.Push(&best, scored{i, score})
		case score > best[0].score:
			best[0] = scored{i, score}
			heap.Fix(&best, 0)
		}
	}
	out := make([]SearchResult, len(best))
	for n := len(best) - 1; n >= 0; n-- { // the heap gives the worst first
		b := heap.Pop(&best).(scored)
		out[n] = s.docs[b.doc].Result(float64(b.score))
	}
	return out, nil
}

type scored struct {
	doc   int
	score float32
}

// scoreHeap is a min-heap: its root is the worst of the best so far.
type scoreHeap []scored

func (h scoreHeap) Len() int           { return len(h) }
func (h scoreHeap) Less(i, j int) bool { return h[i].score < h[j].score }
func (h scoreHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *scoreHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
