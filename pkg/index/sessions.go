package index

// sessionShare is the share of its session's second-best score that
// every result gains.
const sessionShare = 0.3

// A session that says more comes first: every result gains a share of
// its session's second-best score among the results, so a turn whose
// session holds another that matches the question ranks above one that
// matches alone, by chance, in a session about something else. Every
// turn of a session gains the same, so their order within it never
// changes. Of LoCoMo's development questions missed first, 112 had
// another session's turn first and the answer at 2 to 5; this took hit@1
// from 0.471 to 0.487 and recall@5 from 0.657 to 0.674 (a share of 0.2 to
// 0.4 gave the same within 0.004; its second and third best added up, or
// all its others, less). LongMemEval's moved by a question at most. A
// result the encoder put under its floor (unrelated) neither gains nor
// counts: it stays after every related result. results must be best first.
func creditSessions(results []SearchResult) {
	found := make(map[string]int, len(results))
	second := map[string]float64{}
	for _, r := range results { // best first: a session's second result is its second-best
		if r.unrelated {
			continue
		}
		if found[r.SessionID]++; found[r.SessionID] == 2 {
			second[r.SessionID] = r.Score
		}
	}
	if len(second) == 0 {
		return
	}
	for i := range results {
		if !results[i].unrelated {
			results[i].Score += sessionShare * second[results[i].SessionID]
		}
	}
	sortResults(results)
}
