package index

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func said(author string, seq int64, score float64) SearchResult {
	return SearchResult{SessionID: "s1", EventID: fmt.Sprintf("%s:%d", author, seq), Seq: seq, Author: author, Role: "user", Score: score}
}

func TestTheAuthorAQueryNamesComesFirst(t *testing.T) {
	for _, c := range []struct {
		name, query string
		results     []SearchResult
		want        []string
	}{
		{"the other said it back", "What did Caroline research?",
			[]SearchResult{said("Melanie", 4, 0.6), said("Caroline", 3, 0.5), said("Melanie", 2, 0.2)},
			[]string{"Caroline:3", "Melanie:4", "Melanie:2"}},
		{"a possessive, in another case", "what is CAROLINE'S dog called",
			[]SearchResult{said("Melanie", 4, 0.6), said("caroline", 3, 0.5)},
			[]string{"caroline:3", "Melanie:4"}},
		{"a name of two words", "what did Mary Ann cook",
			[]SearchResult{said("Bob", 4, 0.6), said("Mary Ann", 3, 0.5)},
			[]string{"Mary Ann:3", "Bob:4"}},
		{"twice as good still wins", "What did Caroline research?",
			[]SearchResult{said("Melanie", 4, 0.6), said("Caroline", 3, 0.29)},
			[]string{"Melanie:4", "Caroline:3"}},
		{"both named", "What did Caroline tell Melanie?",
			[]SearchResult{said("Melanie", 4, 0.6), said("Caroline", 3, 0.5)},
			[]string{"Melanie:4", "Caroline:3"}},
		{"none named", "who went to the support group?",
			[]SearchResult{said("Melanie", 4, 0.6), said("Caroline", 3, 0.5)},
			[]string{"Melanie:4", "Caroline:3"}},
		{"a name inside a word is no name", "the annual report",
			[]SearchResult{said("Bob", 4, 0.6), said("Ann", 3, 0.5)},
			[]string{"Bob:4", "Ann:3"}},
		{"a role is no name", "what did the assistant suggest?",
			[]SearchResult{said("user", 4, 0.6), said("assistant", 3, 0.5)},
			[]string{"user:4", "assistant:3"}},
		{"an author of no words", "??? !!!",
			[]SearchResult{said("Bob", 4, 0.6), said("!!!", 3, 0.5)},
			[]string{"Bob:4", "!!!:3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := orderAfter(func(rs []SearchResult) { preferNamedAuthor(c.query, rs) }, c.results)
			if !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// Whatever the query and results, preferNamedAuthor keeps every result,
// keeps scores in order, and changes a score only to halve it, for
// results by anyone but the one author the query names.
func TestPreferNamedAuthorKeepsResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	authors := []string{"Caroline", "Melanie", "user", "assistant", "Mary Ann", ""}
	for range 2000 {
		var rs []SearchResult
		score := 1.0
		for i := range rng.IntN(12) {
			score -= rng.Float64() / 10
			rs = append(rs, said(authors[rng.IntN(len(authors))], int64(i), score))
		}
		var named []string
		for range rng.IntN(3) {
			named = append(named, authors[rng.IntN(len(authors))])
		}
		query := "what did " + strings.Join(named, " and ") + " say"
		got := slices.Clone(rs)
		preferNamedAuthor(query, got)
		if !slices.Equal(slices.Sorted(slices.Values(ids(got))), slices.Sorted(slices.Values(ids(rs)))) {
			t.Fatalf("results changed: %v → %v", ids(rs), ids(got))
		}
		if !slices.IsSortedFunc(got, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) }) {
			t.Fatalf("scores out of order: %v", got)
		}
		people := map[string]bool{}
		for _, r := range rs {
			for _, n := range named {
				if r.Author == n && (&Document{Author: n, Role: "user"}).named() && n != "" {
					people[n] = true
				}
			}
		}
		for _, r := range got {
			before := rs[slices.IndexFunc(rs, func(x SearchResult) bool { return x.EventID == r.EventID })].Score
			halved := len(people) == 1 && !people[r.Author]
			if want := map[bool]float64{true: before * othersShare, false: before}[halved]; r.Score != want {
				t.Fatalf("%q: %s scored %v, want %v (%v named)", query, r.EventID, r.Score, want, people)
			}
		}
	}
}
