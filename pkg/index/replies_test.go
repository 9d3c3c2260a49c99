package index

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestAsksBriefly(t *testing.T) {
	for text, want := range map[string]bool{
		"What made you decide to run again?":                  true,
		"Wow, great pic! Where did you go on that road trip?": true,
		`"Did you?" she asked, and laughed.`:                  false, // more said than asked
		"Really?!":                                            true,
		"Is it (the blue one)?":                               true,
		"I went camping with my kids last weekend.":           false,
		"Thanks! That was fun. How are you?":                  false,
		"":                                                    false,
		"I just got a Fitbit for my runs and I log every mile, every meal and every night's sleep in it: which plan should I pick?": false,
	} {
		if got := asksBriefly(text); got != want {
			t.Errorf("asksBriefly(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestCreditRepliesMovesHalfAQuestionsScoreToTheNextEvent(t *testing.T) {
	r := func(session string, seq int64, score float64, text string) SearchResult {
		return SearchResult{SessionID: session, EventID: text, Seq: seq, Score: score, Content: text}
	}
	results := []SearchResult{
		r("s", 3, 1.0, "What made you decide to run again?"),
		r("s", 9, 0.7, "I decided to run again last week."),
		r("s", 4, 0.6, "After my last run, I saw the impact I could make."),
		r("t", 5, 0.5, "Where is the party?"),             // its next event is no candidate
		r("t", 7, 0.45, "At Ana's place, on Friday."),     // two events later: no reply
		r("u", 1, 0.4, "And yours, how did it go today?"), // its reply is in session s's seq 2? no: other session
	}
	creditReplies(results, 0)
	var got []string
	for _, x := range results {
		got = append(got, x.EventID)
	}
	want := []string{"After my last run, I saw the impact I could make.", "I decided to run again last week.",
		"What made you decide to run again?", "At Ana's place, on Friday.", "Where is the party?", "And yours, how did it go today?"}
	if !slices.Equal(got, want) {
		t.Fatalf("order after crediting replies:\n%q\nwant\n%q", got, want)
	}
	scores := map[string]float64{}
	for _, x := range results {
		scores[x.EventID] = x.Score
	}
	for id, score := range map[string]float64{want[0]: 1.1, want[1]: 0.7, want[2]: 0.5, want[3]: 0.45, want[4]: 0.25, want[5]: 0.2} {
		if math.Abs(scores[id]-score) > 1e-9 {
			t.Errorf("%q: score %v, want %v", id, scores[id], score)
		}
	}
	if s := results[0].Signals[SignalReply]; s.Rank != 1 || s.Score != 0.5 {
		t.Errorf("the reply's signal: %+v, want rank 1 (its question's) and score 0.5", results[0].Signals)
	}
	if len(results[3].Signals) != 0 {
		t.Errorf("a turn two events after a question is credited: %+v", results[3].Signals)
	}
}

// A vector search's similarities are all well above 0: a question gives
// half of what its similarity exceeds the embedder's floor, so that its
// reply is lifted above an answer as much as it would be from 0, not past
// every other result.
func TestCreditRepliesFromAFloor(t *testing.T) {
	results := []SearchResult{
		{SessionID: "s", EventID: "question", Seq: 1, Score: 0.84, Content: "Where did you go?"},
		{SessionID: "t", EventID: "answer", Seq: 5, Score: 0.82, Content: "We hiked the fjords near Bergen."},
		{SessionID: "s", EventID: "reply", Seq: 2, Score: 0.76, Content: "Just to my aunt's."},
		{SessionID: "u", EventID: "below", Seq: 1, Score: 0.6, Content: "Why?"},
		{SessionID: "u", EventID: "after below", Seq: 2, Score: 0.59, Content: "No reason."},
	}
	creditReplies(results, 0.75)
	want := map[string]float64{"answer": 0.82, "reply": 0.805, "question": 0.795, "below": 0.6, "after below": 0.59}
	var got []string
	for _, r := range results {
		got = append(got, r.EventID)
		if math.Abs(r.Score-want[r.EventID]) > 1e-9 {
			t.Errorf("%s: score %v, want %v", r.EventID, r.Score, want[r.EventID])
		}
	}
	if order := []string{"answer", "reply", "question", "below", "after below"}; !slices.Equal(got, order) {
		t.Errorf("order %q, want %q (from 0 the reply would have come first, at 1.18)", got, order)
	}
	if _, credited := results[4].Signals[SignalReply]; credited {
		t.Errorf("a question under the floor gave its reply something: %+v", results[4])
	}
}

// Whatever the candidates, crediting replies keeps each of them, scores
// stay positive, what questions give is what replies get or is dropped,
// and the order is by score.
func TestCreditRepliesProperties(t *testing.T) {
	texts := []string{"Where did you go?", "We went to Oslo.", "Why?", "Because of the fjords, mostly.", "Nice! How long?"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rng.IntN(12)
		results := make([]SearchResult, n)
		for i := range results {
			results[i] = SearchResult{SessionID: []string{"a", "b"}[rng.IntN(2)], EventID: strings.Repeat("e", i+1), Seq: int64(rng.IntN(8)),
				Score: rng.Float64() + 0.01, Content: texts[rng.IntN(len(texts))]}
		}
		sortResults(results)
		before := slices.Clone(results)
		creditReplies(results, []float64{0, 0, 0.3, 0.75}[rng.IntN(4)])
		total, totalBefore := 0.0, 0.0
		for i := range results {
			total += results[i].Score
			totalBefore += before[i].Score
			if results[i].Score <= 0 {
				t.Fatalf("score %v after crediting: %+v", results[i].Score, results)
			}
			if i > 0 && results[i].Score > results[i-1].Score {
				t.Fatalf("not ordered by score: %+v", results)
			}
		}
		if total > totalBefore+1e-9 {
			t.Fatalf("crediting made score: %v from %v", total, totalBefore)
		}
		ids := func(rs []SearchResult) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.EventID)
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(ids(results), ids(before)) {
			t.Fatalf("candidates changed: %v, was %v", ids(results), ids(before))
		}
	}
}

func FuzzAsksBriefly(f *testing.F) {
	f.Add("What made you decide to run again?")
	f.Add("Wow!? Really?! \"Yes.\"")
	f.Fuzz(func(t *testing.T, text string) {
		if asksBriefly(text) && (len(strings.Fields(text)) > shortTurnWords || !strings.Contains(text, "?")) {
			t.Errorf("asksBriefly(%q): true for a long turn or one without a question mark", text)
		}
	})
}
