package index

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func in(sessionID string, seq int64, score float64) SearchResult {
	return SearchResult{SessionID: sessionID, EventID: fmt.Sprintf("%s:%d", sessionID, seq), Seq: seq, Score: score}
}

func unrelated(r SearchResult) SearchResult { r.unrelated = true; return r }

func TestASessionThatSaysMoreComesFirst(t *testing.T) {
	for _, c := range []struct {
		name    string
		results []SearchResult
		want    []string
	}{
		{"a lone match by chance", []SearchResult{in("chance", 1, 0.6), in("trip", 4, 0.55), in("trip", 9, 0.5)},
			[]string{"trip:4", "trip:9", "chance:1"}}, // 0.55 + 0.3 × 0.5 > 0.6
		{"a far better lone match", []SearchResult{in("chance", 1, 0.9), in("trip", 4, 0.55), in("trip", 9, 0.5)},
			[]string{"chance:1", "trip:4", "trip:9"}},
		{"one session", []SearchResult{in("trip", 9, 0.6), in("trip", 4, 0.55), in("trip", 2, 0.5)},
			[]string{"trip:9", "trip:4", "trip:2"}},
		{"every session alone", []SearchResult{in("a", 1, 0.6), in("b", 4, 0.55)},
			[]string{"a:1", "b:4"}},
		{"unrelated, in a session that says more", []SearchResult{in("trip", 4, 0.55), in("trip", 9, 0.5), in("b", 1, 0.1), unrelated(in("trip", 2, 1e-7))},
			[]string{"trip:4", "trip:9", "b:1", "trip:2"}}, // the encoder put trip:2 under its floor: it gains nothing
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := orderAfter(creditSessions, c.results); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// Whatever the results, creditSessions keeps every one, keeps each
// session's results in their order, keeps scores in order, and moves a
// result only past a session's results that has fewer.
func TestCreditSessionsKeepsEachSessionsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		var rs []SearchResult
		score := 1.0
		for i := range rng.IntN(14) {
			score -= rng.Float64() / 10
			rs = append(rs, in(fmt.Sprintf("s%d", rng.IntN(4)), int64(i), score))
		}
		got := slices.Clone(rs)
		creditSessions(got)
		if !slices.Equal(slices.Sorted(slices.Values(ids(got))), slices.Sorted(slices.Values(ids(rs)))) {
			t.Fatalf("results changed: %v → %v", ids(rs), ids(got))
		}
		if !slices.IsSortedFunc(got, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) }) {
			t.Fatalf("scores out of order: %v", got)
		}
		count := map[string]int{}
		for _, r := range rs {
			count[r.SessionID]++
		}
		for i, r := range got {
			for _, u := range got[i+1:] {
				if u.SessionID == r.SessionID && u.Seq < r.Seq {
					t.Fatalf("%s moved above %s of its own session: %v", u.EventID, r.EventID, ids(got))
				}
			}
		}
		for i, r := range rs { // r was above u; below it now only if u's session has more results
			for _, u := range rs[i+1:] {
				if slices.IndexFunc(got, func(x SearchResult) bool { return x.EventID == u.EventID }) <
					slices.IndexFunc(got, func(x SearchResult) bool { return x.EventID == r.EventID }) && count[u.SessionID] < 2 {
					t.Fatalf("%s, alone in its session, moved above %s: %v → %v", u.EventID, r.EventID, ids(rs), ids(got))
				}
			}
		}
	}
}
