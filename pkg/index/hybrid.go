package index

import (
	"fmt"
	"math"
)

// hybridCandidates is how many results of each signal fusion looks at:
// more than the top few of each list.
func hybridCandidates(limit int) int { return max(4*limit, 40) }

// keywordCandidates is how many keyword results a hybrid search fuses:
// more than the vector's. Fusion scores a vector result by the
// similarity its list is ranked by, so those past the cut would all have
// scored less than those kept; it scores a keyword result by its coverage
// too (see fuse), and its list is ranked by BM25, which counts a word's
// rarity and repetition: a turn that holds every word of the question
// once can sit behind dozens that repeat one of them, and outscore
// them all once fused. Cut short, the keyword list gives such a turn
// nothing. On LoCoMo's development half (783 questions) 100 keyword
// results for the vector's 40 took hit@1 and recall@5 from 0.503 and 0.697
// to 0.507 and 0.707 (with 60: 0.506 and 0.701; 150, 200 or 400: 0.504 to
// 0.506 and 0.708), and alike with the other kernels (see
// docs/evaluation.md); LongMemEval's searches (100 results) and the first
// hour's did not move. The keyword search runs while the query is
// embedded, and a store on a file reads its results' long texts only for
// those kept (see textsLater): bench/scale (LongMemEval's turns, 300 a
// user) searches as fast as with 40 (p50 3.2-3.6 ms, again 1.55-1.58 ms).
// Reading every text, it took 3.7-4.3 ms and 1.5-1.7 ms against 3.2 and
// 1.2-1.3, and held appends up (p99 up to 0.9 s while 4 clients searched).
// The vector's 100 as well would add as much again of hit@1 and a point of
// recall@10 on LoCoMo: not taken.
func keywordCandidates(limit int) int { return max(hybridCandidates(limit), 100) }

// DefaultVectorWeight is the vector's share of a fused score, the
// keyword's being the rest, for an embedder that does not give its own
// (embed.VectorWeight: e5-small does), unless WithFusion says otherwise.
// Chosen on both development halves with all-MiniLM-L6-v2, its floor of 0.3,
// replies credited and vectors made with the last 24 words of the message
// before (see befores): LoCoMo's hit@1 and recall@5 0.427 and 0.606 at
// 0.3, 0.436 and 0.612 at 0.4, 0.434 and 0.613 at 0.5; LongMemEval's recall_all@5 and
// ndcg_any@5 0.901 and 0.888 at both 0.3 and 0.4. LongMemEval alone would
// take more (ndcg_any@5 0.918 at 0.7), which costs LoCoMo (hit@1 0.382 at
// 0.6, before vectors had the message before).
const DefaultVectorWeight = 0.4

// Fusion is how a hybrid search weighs its two signals (see fuse).
type Fusion struct {
	// VectorWeight is the vector's share of a fused score, from 0 to 1.
	VectorWeight float64
	// SimilarityFloor: a result found only by its vector and less similar
	// than this is left out; the similarity it is scaled from.
	SimilarityFloor float64
}

func (f Fusion) check() error {
	if !(f.VectorWeight >= 0 && f.VectorWeight <= 1) {
		return fmt.Errorf("%w: the vector weight %v is not between 0 and 1", ErrInvalidArgument, f.VectorWeight)
	}
	if !(f.SimilarityFloor >= -1 && f.SimilarityFloor < 1) {
		return fmt.Errorf("%w: the similarity floor %v is not from -1 to under 1", ErrInvalidArgument, f.SimilarityFloor)
	}
	return nil
}

// underFloor is what a result the encoder puts under its floor scores,
// times its similarity: enough to keep such results in the encoder's order,
// far too little to pass another (a keyword part is seldom under a
// thousandth, a vector part above the floor under a millionth).
const underFloor = 1e-6

// fuse merges a keyword and a vector list into one, best first, on a
// score a person can read, between 0 and 1. The keyword part is the
// result's coverage (the share of the query's terms it holds: a result
// found only by a name that many turns carry counts little) times the
// square root of its keyword score against the best one's; the vector
// part is its cosine similarity above floor, scaled to [0, 1]. Coverage
// is Hector's own, the same whichever the store; the stores' keyword
// scores differ in scale and shape (Qdrant's document frequencies are the
// whole collection's), so they count less. On LoCoMo's development half
// (hit@1, recall@5, floor 0.2): 0.370 and 0.554 so, 0.368 and 0.559 with the keyword
// score itself (which put Qdrant 0.04 of recall@5 below the in-process
// store on Hector's own set), 0.359 and 0.544 with coverage squared, and
// weighted reciprocal rank fusion, which throws the scores away, 0.304 and
// 0.437. A result whose similarity is under floor is unrelated by the
// encoder's measure: its words, if it has any of the query's, are shared by
// chance and count for nothing ("whose wedding is coming up?" and "I'm
// saving up for a trip": 0.72), and it comes after every other result, in
// the encoder's order (its score underFloor times its similarity). The
// encoder judges only what it scored, its candidates; a keyword result it
// did not reach keeps what its words give. On the first-hour set, leaving
// the words out took the default's hit@1 from 0.864 to 0.932 (the encoder
// alone: 0.949); leaving such results out altogether, as hybrid search did
// at first, lost the answers a new user's small memory holds just under the
// floor ("Which relative had an operation?" and "My uncle had knee
// surgery", 0.732): found last they gave 0.949 and recall@5 0.966 → 1, where
// neither benchmark moved (their questions have enough results above the
// floor). Signals keep what each search made of each result (its rank,
// its own score). coverage maps a keyword result to its coverage.
func fuse(keyword, vector []SearchResult, coverage func(SearchResult) float64, f Fusion, limit int) []SearchResult {
	weight, floor := f.VectorWeight, f.SimilarityFloor
	fused := map[eventKey]*SearchResult{}
	add := func(signal string, rank int, r SearchResult, part float64) *SearchResult {
		key, own := eventKey{r.SessionID, r.EventID}, Signal{Rank: rank + 1, Score: r.Score}
		f := fused[key]
		if f == nil {
			f = &r // a copy: the lists are the stores'
			f.Score, f.Signals = 0, map[string]Signal{}
			fused[key] = f
		}
		f.Score += part
		f.Signals[signal] = own
		return f
	}
	best := 0.0
	for _, r := range keyword {
		best = max(best, r.Score)
	}
	for rank, r := range keyword {
		part := (1 - weight) * coverage(r)
		if best > 0 {
			part *= math.Sqrt(max(r.Score, 0) / best)
		}
		add(string(KindKeyword), rank, r, part)
	}
	for rank, r := range vector {
		if r.Score < floor {
			delete(fused, eventKey{r.SessionID, r.EventID}) // its words are shared by chance
			add(string(KindVector), rank, r, underFloor*max(r.Score, 0)).unrelated = true
			continue
		}
		add(string(KindVector), rank, r, weight*max(0, (r.Score-floor)/(1-floor)))
	}
	out := make([]SearchResult, 0, len(fused))
	for _, f := range fused {
		out = append(out, *f)
	}
	sortResults(out)
	return out[:min(limit, len(out))]
}

// coverage is the share of the query's terms that a result holds, among
// the words it is found by: as the store counted them (the in-process
// stores do, from the words they indexed), else read from its text (the
// engines' results), which took a third of a LongMemEval search.
func (x *Index) coverage(queryTerms []string) func(SearchResult) float64 {
	q := unique(queryTerms)
	// An English word's stem begins with its first letter: a word that
	// begins no query term cannot become one, and is not stemmed (the
	// others' stems are remembered: see stems).
	var initials [256]bool
	for _, t := range q {
		initials[t[0]] = true
	}
	stemmed := func(w []byte) string {
		if !initials[w[0]] {
			return ""
		}
		return stem(w)
	}
	return func(r SearchResult) float64 {
		switch {
		case len(q) == 0:
			return 0
		case r.terms > 0: // counted by the store, from the words it indexed
			return float64(r.terms) / float64(len(q))
		}
		d := Document{Author: r.Author, Role: r.Role, Text: r.Content}
		held := make([]bool, len(q))
		n := 0
		x.tok.each(d.searchedText(), stemmed, func(term string) {
			for i, t := range q {
				if !held[i] && term == t {
					held[i] = true
					n++
				}
			}
		})
		return float64(n) / float64(len(q))
	}
}
