package index

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hectormem/hector/pkg/session"
)

func found(sessionID string, seq int64, role string, score, keyword float64) SearchResult {
	r := SearchResult{SessionID: sessionID, EventID: fmt.Sprintf("%s:%d", sessionID, seq), Seq: seq, Role: role, Score: score,
		Signals: map[string]Signal{string(KindVector): {Rank: 1, Score: 0.8}}}
	if keyword > 0 {
		r.Signals[string(KindKeyword)] = Signal{Rank: 1, Score: keyword}
	}
	return r
}

func TestTheUsersMessageRanksAboveTheReplyThatRestatesIt(t *testing.T) {
	for _, c := range []struct {
		name    string
		results []SearchResult
		want    []string
	}{
		{"the reply borrowed the user's words", []SearchResult{
			found("s1", 5, session.RoleAssistant, 0.9, 0), found("s2", 3, session.RoleUser, 0.8, 0), found("s1", 4, session.RoleUser, 0.7, 2.1),
		}, []string{"s1:4", "s1:5", "s2:3"}},
		{"the reply's own words match better", []SearchResult{
			found("s1", 5, session.RoleAssistant, 0.9, 3.0), found("s1", 4, session.RoleUser, 0.7, 2.1),
		}, []string{"s1:5", "s1:4"}},
		{"neither found by its words", []SearchResult{
			found("s1", 5, session.RoleAssistant, 0.9, 0), found("s1", 4, session.RoleUser, 0.7, 0),
		}, []string{"s1:4", "s1:5"}},
		{"not the message it answers", []SearchResult{
			found("s1", 5, session.RoleAssistant, 0.9, 0), found("s1", 3, session.RoleUser, 0.7, 1),
		}, []string{"s1:5", "s1:3"}},
		{"the message before is another assistant's", []SearchResult{
			found("s1", 5, session.RoleAssistant, 0.9, 0), found("s1", 4, session.RoleAssistant, 0.7, 1),
		}, []string{"s1:5", "s1:4"}},
		{"already in order", []SearchResult{
			found("s1", 4, session.RoleUser, 0.9, 1), found("s1", 5, session.RoleAssistant, 0.8, 0),
		}, []string{"s1:4", "s1:5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := slices.Clone(c.results)
			userFirst(got)
			if !slices.Equal(ids(got), c.want) {
				t.Errorf("order %v, want %v", ids(got), c.want)
			}
			if !slices.IsSortedFunc(got, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) }) {
				t.Errorf("scores out of order: a later sort would undo it: %v", got)
			}
		})
	}
}

// Whatever the results, userFirst keeps every one, keeps the order in
// which sessions are first found, keeps scores in order, and leaves no
// assistant reply above the user's message it answers unless its words
// score higher.
func TestUserFirstKeepsResultsAndSessions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var rs []SearchResult
		score := 1.0
		for range rng.IntN(12) {
			role := session.RoleUser
			if rng.IntN(2) == 0 {
				role = session.RoleAssistant
			}
			score -= rng.Float64() / 10
			r := found(fmt.Sprintf("s%d", rng.IntN(3)), int64(rng.IntN(6)+1), role, score, float64(rng.IntN(3)))
			if slices.ContainsFunc(rs, func(x SearchResult) bool { return x.EventID == r.EventID }) {
				continue
			}
			rs = append(rs, r)
		}
		got := slices.Clone(rs)
		userFirst(got)
		if !slices.Equal(slices.Sorted(slices.Values(ids(got))), slices.Sorted(slices.Values(ids(rs)))) {
			t.Fatalf("results changed: %v → %v", ids(rs), ids(got))
		}
		if !slices.Equal(sessionsInOrder(got), sessionsInOrder(rs)) {
			t.Fatalf("sessions reordered: %v → %v", ids(rs), ids(got))
		}
		for i, r := range got {
			for _, u := range got[i+1:] {
				if r.Role == session.RoleAssistant && u.Role == session.RoleUser && u.SessionID == r.SessionID && u.Seq == r.Seq-1 &&
					signalScore(r, KindKeyword) <= signalScore(u, KindKeyword) {
					t.Fatalf("%s above the message it answers: %v", r.EventID, ids(got))
				}
			}
		}
	}
}

func sessionsInOrder(rs []SearchResult) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.SessionID) {
			out = append(out, r.SessionID)
		}
	}
	return out
}
