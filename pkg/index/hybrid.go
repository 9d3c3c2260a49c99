package index

// RRFK is reciprocal rank fusion's constant (Cormack et al.): a result's
// fused score is the sum over the lists that found it of 1/(RRFK + rank),
// ranks counted from 1.
const RRFK = 60

// hybridCandidates is how many results of each signal fusion looks at:
// more than the top few of each list.
func hybridCandidates(limit int) int { return max(4*limit, 40) }

// fuse merges ranked lists by reciprocal rank fusion. Each result's
// metadata says which lists found it and at which rank (1 = best).
func fuse(lists map[string][]SearchResult, limit int) []SearchResult {
	fused := map[eventKey]*SearchResult{}
	for signal, results := range lists {
		for rank, r := range results {
			key := eventKey{r.SessionID, r.EventID}
			own := Signal{Rank: rank + 1, Score: r.Score}
			f := fused[key]
			if f == nil {
				f = &r // a copy: the lists are the stores'
				f.Score, f.Signals = 0, map[string]Signal{}
				fused[key] = f
			}
			f.Score += 1 / float64(RRFK+rank+1)
			f.Signals[signal] = own
		}
	}
	out := make([]SearchResult, 0, len(fused))
	for _, f := range fused {
		out = append(out, *f)
	}
	sortResults(out)
	return out[:min(limit, len(out))]
}
