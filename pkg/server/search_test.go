package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
)

// memory:search takes the filters and the recency half-life in its body,
// and what a search finds is the filtered user's and nobody else's.
func TestSearchFiltersAndRecency(t *testing.T) {
	s := newTestServer(t, nil)
	do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "home"})
	do(t, s, "POST", "/v1/apps/a/users/bob/sessions", adminKey, map[string]any{"session_id": "bobs"})
	for _, e := range []struct{ user, session, id, author, role, text, at string }{
		{"alice", "home", "e1", "Alice", "user", "I live on Elm Street, the Elm Street flat", "2026-03-01T12:00:00Z"},
		{"alice", "home", "e2", "agent", "assistant", "Noted: Elm Street", "2026-03-02T12:00:00Z"},
		{"alice", "home", "e3", "Alice", "user", "I moved to a street by the river", "2026-03-20T12:00:00Z"},
		{"bob", "bobs", "b1", "Alice", "user", "Elm Street is where bob's friend Alice lives", "2026-03-05T12:00:00Z"},
	} {
		w := do(t, s, "POST", "/v1/apps/a/users/"+e.user+"/sessions/"+e.session+"/events", adminKey, map[string]any{"id": e.id, "author": e.author, "timestamp": e.at,
			"message": map[string]any{"role": e.role, "parts": []any{map[string]any{"type": "text", "text": e.text}}}})
		if w.Code != 201 {
			t.Fatal(w.Code, w.Body)
		}
	}
	type result struct {
		EventID string                        `json:"event_id"`
		Signals map[string]struct{ Rank int } `json:"signals"`
	}
	search := func(body map[string]any) []result {
		t.Helper()
		if body["query"] == nil {
			body["query"] = "Elm Street"
		}
		w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, body)
		if w.Code != 200 {
			t.Fatalf("search %v: %d %s", body, w.Code, w.Body)
		}
		var out struct{ Results []result }
		json.Unmarshal(w.Body.Bytes(), &out)
		return out.Results
	}
	ids := func(rs []result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.EventID)
		}
		return out
	}
	for _, tc := range []struct {
		body map[string]any
		want []string
	}{
		{map[string]any{"author": "Alice"}, []string{"e1", "e3"}},
		{map[string]any{"role": "assistant"}, []string{"e2"}},
		{map[string]any{"session_id": "home", "after": "2026-03-02"}, []string{"e2", "e3"}},
		{map[string]any{"before": "2026-03-02T12:00:00Z"}, []string{"e1"}},
		{map[string]any{"session_id": "bobs"}, nil},
	} {
		got := ids(search(tc.body))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("search %v found %q, want %q", tc.body, got, tc.want)
		}
	}
	// The user's curated facts that match come with an unfiltered search.
	if w := do(t, s, "POST", "/v1/apps/a/users/alice/facts", aliceKey, map[string]any{"key": "home", "value": "Lives on Oak Street"}); w.Code != 201 {
		t.Fatal(w.Code, w.Body)
	}
	var withFacts struct {
		Facts []struct {
			Key   string  `json:"key"`
			Score float64 `json:"score"`
		} `json:"facts"`
	}
	w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, map[string]any{"query": "street"})
	if json.Unmarshal(w.Body.Bytes(), &withFacts); len(withFacts.Facts) != 1 || withFacts.Facts[0].Key != "home" || withFacts.Facts[0].Score <= 0 {
		t.Errorf("an unfiltered search's facts: %s", w.Body)
	}
	if w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, map[string]any{"query": "street", "as_of": "2020-01-01"}); !strings.Contains(w.Body.String(), `"facts":[]`) {
		t.Errorf("facts as of before any was written: %s", w.Body)
	}
	plain := search(map[string]any{"query": "street", "author": "Alice"})
	if got := ids(plain); !slices.Equal(got, []string{"e1", "e3"}) {
		t.Errorf("without recency found %q, want the Elm Street flat first", got)
	}
	recent := search(map[string]any{"query": "street", "author": "Alice", "recency_half_life": "3d"})
	if got := ids(recent); !slices.Equal(got, []string{"e3", "e1"}) || recent[0].Signals["recency"].Rank != 1 {
		t.Errorf("preferring recent found %q (%+v), want the move first, with its recency signal", got, recent)
	}
}

// "as_of" in memory:search is when the search is asked: a hybrid search's
// "last week" counts back from it, as the facts found are those that held
// then.
func TestSearchAsOfCountsBackFromThen(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) {
		c.Server.Index.Type, c.Server.Index.Embedder = "hybrid", "h"
	}, "embedders:\n  h: {type: hash}\n")
	do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "teeth"})
	for id, at := range map[string]string{"march": "2026-03-02T09:00:00Z", "may": "2026-05-04T09:00:00Z"} {
		w := do(t, s, "POST", "/v1/apps/a/users/alice/sessions/teeth/events", adminKey, map[string]any{"id": id, "author": "user", "timestamp": at,
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "I had a check-up at the dentist"}}}})
		if w.Code != 201 {
			t.Fatal(w.Code, w.Body)
		}
	}
	for asOf, want := range map[string]string{"2026-03-09": "march", "2026-05-11T10:00:00Z": "may"} {
		w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, map[string]any{"query": "the dentist last week", "as_of": asOf})
		var out struct {
			Results []struct {
				EventID string `json:"event_id"`
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 || len(out.Results) != 2 || out.Results[0].EventID != want {
			t.Errorf("asked as of %s: %d %s; want %q first", asOf, w.Code, w.Body, want)
		}
	}
	if w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, map[string]any{"query": "dentist", "as_of": "last week"}); w.Code != 400 || !strings.Contains(w.Body.String(), "as_of") {
		t.Errorf("a bad as_of: %d %s", w.Code, w.Body)
	}
}
