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

func TestAnAssistantsTurnCountsLess(t *testing.T) {
	for _, c := range []struct {
		name    string
		results []SearchResult
		want    []string
	}{
		{"a restatement turns later", []SearchResult{
			found("s1", 8, session.RoleAssistant, 0.9, 0), found("s1", 3, session.RoleUser, 0.8, 0),
		}, []string{"s1:3", "s1:8"}},
		{"another session's reply", []SearchResult{
			found("s2", 6, session.RoleAssistant, 0.9, 0), found("s1", 3, session.RoleUser, 0.8, 0),
		}, []string{"s1:3", "s2:6"}},
		{"what the assistant said, nothing the user said as near", []SearchResult{
			found("s1", 6, session.RoleAssistant, 0.9, 0), found("s1", 3, session.RoleUser, 0.7, 0),
		}, []string{"s1:6", "s1:3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := orderAfter(countAssistantsLess, c.results); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// Whatever the results, countAssistantsLess keeps every one, leaves the
// user's scores as they were, takes assistantShare of each assistant's,
// and leaves them sorted.
func TestCountAssistantsLessKeepsResultsAndScales(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var rs []SearchResult
		score := 1.0
		for i := range rng.IntN(12) {
			role := []string{session.RoleUser, session.RoleAssistant, session.RoleTool}[rng.IntN(3)]
			score -= rng.Float64() / 10
			rs = append(rs, found(fmt.Sprintf("s%d", rng.IntN(3)), int64(i+1), role, score, 0))
		}
		got := slices.Clone(rs)
		countAssistantsLess(got)
		if !slices.IsSortedFunc(got, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) }) {
			t.Fatalf("scores out of order: %v", got)
		}
		if len(got) != len(rs) {
			t.Fatalf("%d results became %d", len(rs), len(got))
		}
		for _, r := range rs {
			i := slices.IndexFunc(got, func(g SearchResult) bool { return g.EventID == r.EventID })
			want := r.Score
			if r.Role == session.RoleAssistant {
				want *= assistantShare
			}
			if i < 0 || got[i].Score != want {
				t.Fatalf("%s (%s) scored %v: %v, want %v", r.EventID, r.Role, r.Score, got, want)
			}
		}
	}
}
