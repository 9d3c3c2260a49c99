package eval

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// A run plays the conversations into real stores, asks each question as
// its own user (never seeing another user's turns), and scores what the
// index found: here a keyword index, whose ranking is plain to reason
// about.
func TestRunScoresWhatTheIndexFinds(t *testing.T) {
	d, err := LoadJSONL("own.jsonl", []byte(ownSet+
		`{"kind":"query","user":"alice","id":"q3","text":"How many euros was the booking?","category":"travel","answers":["e2"]}
{"kind":"query","user":"bob","id":"q4","text":"Book a flight to Lisbon","category":"travel","answers":["e1"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	idx, err := index.NewKeyword(index.WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var stages []string
	r, err := Run(t.Context(), d, sessions, idx, Options{Progress: func(p Progress) {
		if p.Done == p.Total {
			stages = append(stages, p.Stage)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Users != 2 || r.Turns != 3 || r.Questions != 4 || strings.Join(stages, ",") != "loading" {
		t.Errorf("report = %+v, stages %v", r, stages)
	}
	// q1 (alice: flying, May) finds e1 first; q2 (bob: deploy) finds his
	// e1; q3 (euros) finds e2; q4 asks bob about alice's flight,
	// which his memory does not hold: nothing to find.
	byName := map[string]Figures{}
	for _, c := range r.Categories {
		byName[c.Name] = c
	}
	if all := byName["all"]; all.Questions != 1 || all.Values["hit@1"] != 1 {
		t.Errorf("bob's question: %+v", all)
	}
	if tr := byName["travel"]; tr.Questions != 3 || !near(tr.Values["hit@1"], 2.0/3) || !near(tr.Values["recall@10"], 2.0/3) {
		t.Errorf("travel = %+v", tr)
	}
	if !near(r.Overall.Values["hit@1"], 3.0/4) || r.SearchMillis.P50 <= 0 {
		t.Errorf("overall = %+v, search %+v", r.Overall, r.SearchMillis)
	}
	if ms := r.SearchMillis; ms.Max < ms.P99 || ms.P99 < ms.P50 || !slices.Contains([]string{"q1", "q2", "q3", "q4"}, ms.Slowest) {
		t.Errorf("search latency %+v: want p50 ≤ p99 ≤ the slowest, named by its question", ms)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "jsonl: 2 users, 2 sessions, 3 turns, 4 questions") || !strings.Contains(text.String(), "overall") ||
		!strings.Contains(text.String(), "(question "+r.SearchMillis.Slowest+")") {
		t.Errorf("the text report:\n%s", text.String())
	}

	// Asked by four clients at once, the same questions score the same.
	sessions = session.NewInMemoryService()
	idx, _ = index.NewKeyword(index.WithSessions(sessions))
	idx.Start(t.Context())
	var mu sync.Mutex
	heard := map[string]time.Duration{}
	searched := func(id string, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		heard[id] += took
	}
	together, err := Run(t.Context(), d, sessions, idx, Options{Clients: 4, Searched: searched})
	if err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	for _, took := range heard {
		slowest = max(slowest, took)
	}
	if len(heard) != 4 || heard["q1"] <= 0 || millis(slowest) != together.SearchMillis.Max {
		t.Errorf("Searched heard %v; want each of the 4 questions once, the slowest the report's %v ms", heard, together.SearchMillis.Max)
	}
	if together.Clients != 4 || !reflect.DeepEqual(together.Overall, r.Overall) || !reflect.DeepEqual(together.Categories, r.Categories) {
		t.Errorf("asked by 4 clients: %d clients, %+v %+v; want the figures of one client, %+v %+v",
			together.Clients, together.Overall, together.Categories, r.Overall, r.Categories)
	}
	text.Reset()
	together.WriteText(&text)
	if !strings.Contains(text.String(), "(4 clients at once)") {
		t.Errorf("the text report does not say how many clients asked:\n%s", text.String())
	}

	// Only the first question, and only its user's conversations.
	sessions = session.NewInMemoryService()
	idx, _ = index.NewKeyword(index.WithSessions(sessions))
	idx.Start(t.Context())
	r, err = Run(t.Context(), d, sessions, idx, Options{Questions: 1})
	if err != nil || r.Questions != 1 || r.Users != 1 || r.Turns != 2 {
		t.Errorf("limited to one question: %+v, %v", r, err)
	}
}

// A sample of N questions is taken in turn from each category, the first
// of each first, in the file's order: a file sorted by category (as
// LongMemEval's is) is not sampled from one category only (finding 11 of
// issue 71).
func TestASampleSpansTheCategories(t *testing.T) {
	d := &Dataset{Users: []User{{ID: "u1"}, {ID: "u2"}, {ID: "u3"}}}
	for _, c := range []string{"a", "b", "c"} {
		for i := range 5 {
			d.Questions = append(d.Questions, Question{ID: fmt.Sprintf("%s%d", c, i), Category: c, UserID: "u" + fmt.Sprint(i%3+1)})
		}
	}
	var ids []string
	for _, q := range d.sample(7).Questions {
		ids = append(ids, q.ID)
	}
	if want := []string{"a0", "a1", "a2", "b0", "b1", "c0", "c1"}; !slices.Equal(ids, want) {
		t.Errorf("sample of 7: %q, want %q", ids, want)
	}
	if got := d.sample(0); got != d {
		t.Error("a sample of 0 is not every question")
	}
}
