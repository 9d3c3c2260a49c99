package index

import (
	"errors"
	"math"
	"sort"
	"sync"
)

// BM25 parameters: the usual ones (Robertson & Zaragoza).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25Shard is an in-memory inverted index of one (app, user)'s documents,
// over the terms the index tokenized them into. Removing a document only
// marks it dead; its postings are skipped at query time and dropped when
// dead documents outnumber live ones.
type bm25Shard struct {
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

func newBM25Shard() *bm25Shard {
	return &bm25Shard{byEvent: map[eventKey]int32{}, postings: map[string][]posting{}}
}

func (s *bm25Shard) add(docs []StoredDoc) {
	tfs := make([]map[string]int32, len(docs))
	for i, d := range docs { // outside the lock: searches go on meanwhile
		tfs[i] = make(map[string]int32, len(d.Terms))
		for _, t := range d.Terms {
			tfs[i][t]++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range docs {
		s.put(d.Document, int32(len(d.Terms)), tfs[i])
	}
}

// put adds one document; callers hold mu.
func (s *bm25Shard) put(d Document, length int32, tf map[string]int32) {
	key := eventKey{d.SessionID, d.EventID}
	if old, ok := s.byEvent[key]; ok { // indexing an event again replaces it
		s.kill(old)
	}
	n := int32(len(s.docs))
	s.docs = append(s.docs, bm25Doc{Document: d, length: length, live: true})
	s.byEvent[key] = n
	for term, f := range tf {
		s.postings[term] = append(s.postings[term], posting{n, f})
	}
	s.totalLen += int64(length)
	s.live++
}

// shareText gives each of docs this shard's copy of it when the shard
// holds the same document: vectors embedded in the background come from
// events read again, and a message's text is then kept once in memory,
// not once a shard.
func (s *bm25Shard) shareText(docs []StoredDoc) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range docs {
		d := &docs[i].Document
		if n, ok := s.byEvent[eventKey{d.SessionID, d.EventID}]; ok && s.docs[n].live && s.docs[n].Document == *d {
			*d = s.docs[n].Document // equal, and now sharing its strings
		}
	}
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

func (s *bm25Shard) has(key eventKey) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.byEvent[key]
	return ok
}

func (s *bm25Shard) removeWhere(drop func(*Document) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.byEvent {
		if drop(&s.docs[n].Document) {
			s.kill(n)
		}
	}
	if dead := len(s.docs) - s.live; dead > 1024 && dead > s.live {
		s.compact()
	}
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

// search scores the documents holding any of terms (each given once) that
// f keeps. The statistics (document frequencies, average length) are all
// the shard's, whatever f keeps, as in every store.
func (s *bm25Shard) search(terms []string, limit int, f Filter) []SearchResult {
	filtered := !f.IsZero()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.live == 0 || len(terms) == 0 {
		return nil
	}
	n := float64(s.live)
	avgLen := float64(s.totalLen) / n
	scores := bm25Scores[int32]{}
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
			if !d.live || filtered && !f.Keeps(&d.Document) {
				continue
			}
			tf := float64(p.tf)
			scores.add(p.doc, idf*tf*(bm25K1+1)/(tf+bm25K1*(1-bm25B+bm25B*float64(d.length)/avgLen)))
		}
	}
	return s.top(scores, limit)
}

// bm25Score is a document's score and how many of the search's terms
// (each given once) it holds.
type bm25Score struct {
	score float64
	terms int
}

// result is d's result with this score and count.
func (s bm25Score) result(d *Document) SearchResult {
	r := d.Result(s.score)
	r.terms = s.terms
	return r
}

// bm25Scores are a search's documents' scores, by document number.
type bm25Scores[D int32 | int64] map[D]bm25Score

// add adds one term's part to doc's score.
func (m bm25Scores[D]) add(doc D, part float64) {
	s := m[doc]
	m[doc] = bm25Score{s.score + part, s.terms + 1}
}

// top returns the best-scoring documents, ties broken by recency so results are deterministic.
func (s *bm25Shard) top(scores bm25Scores[int32], limit int) []SearchResult {
	ranked := make([]int32, 0, len(scores))
	for doc := range scores {
		ranked = append(ranked, doc)
	}
	better := func(a, b int32) bool {
		if scores[a].score != scores[b].score {
			return scores[a].score > scores[b].score
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
		out[i] = scores[doc].result(&s.docs[doc].Document)
	}
	return out
}

// keywordSnapshot is a shard's live documents and their postings, so that
// loading it tokenizes nothing.
type keywordSnapshot struct {
	Docs     []Document
	Lengths  []int32
	Terms    []string
	Postings [][][2]int32 // per term: (document, term frequency)
}

func (s *bm25Shard) export() keywordSnapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var snap keywordSnapshot
	renumber := make([]int32, len(s.docs))
	for i, d := range s.docs {
		if d.live {
			renumber[i] = int32(len(snap.Docs))
			snap.Docs = append(snap.Docs, d.Document)
			snap.Lengths = append(snap.Lengths, d.length)
		}
	}
	for term, ps := range s.postings {
		var kept [][2]int32
		for _, p := range ps {
			if s.docs[p.doc].live {
				kept = append(kept, [2]int32{renumber[p.doc], p.tf})
			}
		}
		if kept != nil {
			snap.Terms = append(snap.Terms, term)
			snap.Postings = append(snap.Postings, kept)
		}
	}
	return snap
}

func (s *bm25Shard) restore(snap keywordSnapshot) error {
	if len(snap.Lengths) != len(snap.Docs) || len(snap.Postings) != len(snap.Terms) {
		return errors.New("index: a keyword snapshot whose parts do not match")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range snap.Docs {
		s.docs = append(s.docs, bm25Doc{Document: d, length: snap.Lengths[i], live: true})
		s.byEvent[eventKey{d.SessionID, d.EventID}] = int32(i)
		s.totalLen += int64(snap.Lengths[i])
	}
	s.live = len(snap.Docs)
	for i, term := range snap.Terms {
		ps := make([]posting, len(snap.Postings[i]))
		for j, p := range snap.Postings[i] {
			if p[0] < 0 || int(p[0]) >= len(s.docs) {
				return errors.New("index: a keyword snapshot posting past its documents")
			}
			ps[j] = posting{p[0], p[1]}
		}
		s.postings[term] = ps
	}
	return nil
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
