package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
)

// POST …/sessions/{id}/memories:extract learns facts from the session with
// the configured model, within its budget; off, it says how to turn it on.
func TestExtractOverHTTP(t *testing.T) {
	off := newTestServer(t, nil)
	do(t, off, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"})
	if w := do(t, off, "POST", "/v1/apps/a/users/alice/sessions/s/memories:extract", aliceKey, nil); w.Code != 501 || !strings.Contains(w.Body.String(), "server.extraction.llm") {
		t.Errorf("extraction off: %d %s", w.Code, w.Body)
	}

	model := fakellm.Start(t,
		fakellm.Reply{Content: `{"facts": [{"action": "add", "key": "home/city", "statement": "Lives in Lisbon", "category": "biography", "event_ids": ["e1"]}]}`, Usage: [2]int{900, 100}},
		fakellm.Reply{Content: `{"facts": []}`, Usage: [2]int{900, 100}})
	s := newTestServer(t, func(c *config.Config) {
		c.LLMs = map[string]config.LLM{"small": {BaseURL: model.URL, Model: "small-1"}}
		c.Server.Extraction = config.Extraction{LLM: "small", TokensPerHour: 1000}
	})
	u := "/v1/apps/a/users/alice/sessions"
	do(t, s, "POST", u, adminKey, map[string]any{"session_id": "s"})
	if w := do(t, s, "POST", u+"/s/events", aliceKey, map[string]any{"id": "e1", "author": "alice",
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "I live in Lisbon"}}}}); w.Code != 201 {
		t.Fatal(w.Code, w.Body)
	}
	if w := do(t, s, "POST", u+"/s/memories:extract", bobKey, nil); w.Code != 403 {
		t.Errorf("bob extracting alice's session: %d", w.Code)
	}
	w := do(t, s, "POST", u+"/s/memories:extract", aliceKey, nil)
	var res struct {
		Added  int
		Tokens int
		Facts  []facts.Fact
	}
	if json.Unmarshal(w.Body.Bytes(), &res); w.Code != 200 || res.Added != 1 || res.Tokens != 1000 || res.Facts[0].Source.Model != "small-1" {
		t.Fatalf("extract: %d %s", w.Code, w.Body)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/facts/home/city", aliceKey, nil); !strings.Contains(w.Body.String(), `"kind":"extracted"`) {
		t.Errorf("the extracted fact: %s", w.Body)
	}
	w = do(t, s, "POST", u+"/s/memories:extract", aliceKey, map[string]any{"after_seq": 0})
	if w.Code != 429 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "budget_spent") {
		t.Errorf("over the budget: %d %s (Retry-After %q)", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	if w := do(t, s, "POST", u+"/s/memories:extract", aliceKey, map[string]any{"after_seq": 5, "to_seq": 2}); w.Code != 400 {
		t.Errorf("a range that is none: %d %s", w.Code, w.Body)
	}
	if w := do(t, s, "GET", "/metrics", adminKey, nil); !strings.Contains(w.Body.String(), "hector_extraction_tokens_total 1000") {
		t.Errorf("metrics lack the extraction's tokens")
	}
}
