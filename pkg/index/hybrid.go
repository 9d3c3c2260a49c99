package index

import "math"

// RRFK is reciprocal rank fusion's constant (Cormack et al.): a signal's
// contribution to a result is a weight divided by RRFK + its rank there,
// ranks counted from 1.
const RRFK = 60

// hybridCandidates is how many results of each signal fusion looks at:
// more than the top few of each list.
func hybridCandidates(limit int) int { return max(4*limit, 40) }

// How fusion weighs the signals (see fuse). Chosen by measurement on the
// conversation set (indextest.Conversations; TestConversationRetrieval),
// where equal-weight fusion did worse than keyword search alone on
// single-hop questions (recall@5 0.89 against 1.00) and nearly threw away
// the vector's paraphrases (0.06 against 0.31): a question's words that
// match a document only by its author's name, or by common words, made a
// keyword list of noise that counted as much as the vector's.
const (
	// coverageExponent: a keyword result's weight is the share of the
	// query's terms it holds, to this power.
	coverageExponent = 2
	// vectorYield: the vector's weight is 1 - vectorYield × the best
	// keyword coverage, so a query the words answer fully leans on them.
	// Recall@5 is flat between 0.5 and 0.9 with the word vectors (0.545 to
	// 0.550) and best from 0.5 to 0.65 with the sentence encoder (0.635,
	// against 0.629 at 0.8).
	vectorYield = 0.65
)

// fuse merges a keyword and a vector list (Signals say which found each
// result, at which rank and with which score of its own) by weighted
// reciprocal rank fusion: a keyword result weighs its coverage (the share
// of the query's terms it holds, squared), a vector result weighs one
// minus vectorYield times the best coverage. Keyword evidence that covers
// the query wins; a query that shares no word but a name with the answer
// is left to meaning. coverage maps a keyword result to its coverage.
func fuse(keyword, vector []SearchResult, coverage func(SearchResult) float64, limit int) []SearchResult {
	fused := map[eventKey]*SearchResult{}
	add := func(signal string, results []SearchResult, weight func(rank int) float64) {
		for rank, r := range results {
			key := eventKey{r.SessionID, r.EventID}
			own := Signal{Rank: rank + 1, Score: r.Score}
			f := fused[key]
			if f == nil {
				f = &r // a copy: the lists are the stores'
				f.Score, f.Signals = 0, map[string]Signal{}
				fused[key] = f
			}
			f.Score += weight(rank) / float64(RRFK+rank+1)
			f.Signals[signal] = own
		}
	}
	covered := make([]float64, len(keyword))
	best := 0.0
	for i, r := range keyword {
		covered[i] = coverage(r)
		best = max(best, covered[i])
	}
	add(string(KindKeyword), keyword, func(rank int) float64 { return math.Pow(covered[rank], coverageExponent) })
	add(string(KindVector), vector, func(int) float64 { return 1 - vectorYield*best })
	out := make([]SearchResult, 0, len(fused))
	for _, f := range fused {
		out = append(out, *f)
	}
	sortResults(out)
	return out[:min(limit, len(out))]
}

// coverage is the share of the query's terms that a result holds, among
// the words it is found by.
func (x *Index) coverage(queryTerms []string) func(SearchResult) float64 {
	q := unique(queryTerms)
	// An English word's stem begins with its first letter: a word that
	// begins no query term cannot become one, and is not stemmed. The
	// others are stemmed once per search: the candidates share words.
	var initials [256]bool
	for _, t := range q {
		initials[t[0]] = true
	}
	stems := map[string]string{}
	memo := func(w string) string {
		if !initials[w[0]] {
			return ""
		}
		s, ok := stems[w]
		if !ok {
			s = stem(w)
			stems[w] = s
		}
		return s
	}
	return func(r SearchResult) float64 {
		if len(q) == 0 {
			return 0
		}
		d := Document{Author: r.Author, Role: r.Role, Text: r.Content}
		held := map[string]bool{}
		for _, t := range x.tok.tokens(d.searchedText(), memo) {
			held[t] = true
		}
		n := 0
		for _, t := range q {
			if held[t] {
				n++
			}
		}
		return float64(n) / float64(len(q))
	}
}
