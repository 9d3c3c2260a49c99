package index

import (
	"context"
	"math"
	"sort"
	"sync"
)

// BM25 parameters: the usual ones (Robertson & Zaragoza).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25Shard is an in-memory inverted index of one (app, user)'s documents.
// Removing a document only marks it dead; its postings are skipped at query
// time and dropped when dead documents outnumber live ones.
type bm25Shard struct {
	tok Tokenizer

	mu       sync.RWMutex
	docs     []bm25Doc
	byEvent  map[eventKey]int32
	postings map[string][]posting
	totalLen int64
	live     int
}

type eventKey struct{ session, event string }

type bm25Doc struct {
	Document
	length int32
	live   bool
}

type posting struct{ doc, tf int32 }

func newBM25Shard(tok Tokenizer) *bm25Shard {
	return &bm25Shard{tok: tok, byEvent: map[eventKey]int32{}, postings: map[string][]posting{}}
}

func (s *bm25Shard) add(ctx context.Context, docs []Document) error {
	type tokenized struct {
		tf     map[string]int32
		length int32
	}
	prepared := make([]tokenized, len(docs))
	for i, d := range docs { // outside the lock: searches go on meanwhile
		terms := s.tok.Tokens(d.Text)
		tf := make(map[string]int32, len(terms))
		for _, t := range terms {
			tf[t]++
		}
		prepared[i] = tokenized{tf, int32(len(terms))}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range docs {
		key := eventKey{d.SessionID, d.EventID}
		if old, ok := s.byEvent[key]; ok { // re-indexing an event replaces it
			s.kill(old)
		}
		n := int32(len(s.docs))
		s.docs = append(s.docs, bm25Doc{Document: d, length: prepared[i].length, live: true})
		s.byEvent[key] = n
		for term, tf := range prepared[i].tf {
			s.postings[term] = append(s.postings[term], posting{n, tf})
		}
		s.totalLen += int64(prepared[i].length)
		s.live++
	}
	return nil
}

func (s *bm25Shard) kill(n int32) {
	d := &s.docs[n]
	if !d.live {
		return
	}
	d.live = false
	s.totalLen -= int64(d.length)
	s.live--
	delete(s.byEvent, eventKey{d.SessionID, d.EventID})
}

func (s *bm25Shard) removeSession(ctx context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, n := range s.byEvent {
		if key.session == sessionID {
			s.kill(n)
		}
	}
	if dead := len(s.docs) - s.live; dead > 1024 && dead > s.live {
		s.compact()
	}
	return nil
}

// compact drops dead documents and renumbers the live ones.
func (s *bm25Shard) compact() {
	renumber := make([]int32, len(s.docs))
	live := s.docs[:0:0]
	for i, d := range s.docs {
		renumber[i] = -1
		if d.live {
			renumber[i] = int32(len(live))
			s.byEvent[eventKey{d.SessionID, d.EventID}] = int32(len(live))
			live = append(live, d)
		}
	}
	s.docs = live
	for term, ps := range s.postings {
		kept := ps[:0]
		for _, p := range ps {
			if r := renumber[p.doc]; r >= 0 {
				kept = append(kept, posting{r, p.tf})
			}
		}
		if len(kept) == 0 {
			delete(s.postings, term)
		} else {
			s.postings[term] = kept
		}
	}
}

func (s *bm25Shard) search(ctx context.Context, query string, limit int) ([]SearchResult, error) {
	terms := unique(s.tok.Tokens(query))
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.live == 0 || len(terms) == 0 {
		return nil, nil
	}
	n := float64(s.live)
	avgLen := float64(s.totalLen) / n
	scores := make(map[int32]float64)
	for _, term := range terms {
		ps := s.postings[term]
		df := 0
		for _, p := range ps {
			if s.docs[p.doc].live {
				df++
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range ps {
			d := &s.docs[p.doc]
			if !d.live {
				continue
			}
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.length)/avgLen))
		}
	}
	return s.top(scores, limit), nil
}

// top returns the best-scoring documents, ties broken by recency so results are deterministic.
func (s *bm25Shard) top(scores map[int32]float64, limit int) []SearchResult {
	ranked := make([]int32, 0, len(scores))
	for doc := range scores {
		ranked = append(ranked, doc)
	}
	better := func(a, b int32) bool {
		if scores[a] != scores[b] {
			return scores[a] > scores[b]
		}
		da, db := &s.docs[a], &s.docs[b]
		if !da.Timestamp.Equal(db.Timestamp) {
			return da.Timestamp.After(db.Timestamp)
		}
		return da.EventID < db.EventID
	}
	sort.Slice(ranked, func(i, j int) bool { return better(ranked[i], ranked[j]) })
	ranked = ranked[:min(limit, len(ranked))]
	out := make([]SearchResult, len(ranked))
	for i, doc := range ranked {
		out[i] = s.docs[doc].Result(scores[doc])
	}
	return out
}

// documents returns the live documents, for snapshots.
func (s *bm25Shard) documents() []Document {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Document, 0, s.live)
	for _, d := range s.docs {
		if d.live {
			out = append(out, d.Document)
		}
	}
	return out
}

func unique(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
