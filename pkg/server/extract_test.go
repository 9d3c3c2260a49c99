package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
)

// POST …/sessions/{id}/memories:extract learns facts from the session with
// the configured model, within its budget; off, it says how to turn it on.
func TestExtractOverHTTP(t *testing.T) {
	off := newTestServer(t, nil)
	do(t, off, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"})
	if w := do(t, off, "POST", "/v1/apps/a/users/alice/sessions/s/memories:extract", aliceKey, nil); w.Code != 409 || !strings.Contains(w.Body.String(), "server.extraction.llm") {
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
	w = do(t, s, "GET", "/v1/extraction", adminKey, nil)
	if !strings.Contains(w.Body.String(), `"apps":[{"app":"a","hour_tokens":1000,"day_tokens":1000}]`) || !strings.Contains(w.Body.String(), `"model":"small-1"`) {
		t.Errorf("extraction status: %s", w.Body)
	}
	if w := do(t, s, "GET", "/v1/extraction", aliceKey, nil); w.Code != 403 {
		t.Errorf("a user reading the extraction status: %d", w.Code)
	}
	if w := do(t, off, "GET", "/v1/extraction", adminKey, nil); w.Body.String() != "{\"enabled\":false}\n" {
		t.Errorf("extraction status when off: %q", w.Body)
	}
}

// A model server that fails is a 502 naming the model's configuration, not
// a 503 blaming a store.
func TestAFailingExtractionModelIsABadGateway(t *testing.T) {
	model := fakellm.Start(t, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500})
	s := newTestServer(t, func(c *config.Config) {
		c.LLMs = map[string]config.LLM{"small": {BaseURL: model.URL, Model: "small-1"}}
		c.Server.Extraction = config.Extraction{LLM: "small"}
	})
	u := "/v1/apps/a/users/alice/sessions"
	do(t, s, "POST", u, adminKey, map[string]any{"session_id": "s"})
	do(t, s, "POST", u+"/s/events", aliceKey, map[string]any{"author": "alice",
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "I live in Lisbon"}}}})
	w := do(t, s, "POST", u+"/s/memories:extract", aliceKey, nil)
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "server.extraction.llm") || !strings.Contains(w.Body.String(), "small-1") {
		t.Errorf("a failing model: %d %s", w.Code, w.Body)
	}
}

// An agent that learns from its conversations: each turn is noted for
// extraction in the background, and no turn waits for it or fails with it
// (here the extraction model holds its answer, then fails).
func TestAgentTurnsNeverWaitForExtraction(t *testing.T) {
	agentModel := fakellm.Start(t, fakellm.Reply{Content: "Noted."}, fakellm.Reply{Content: "Noted again."}, fakellm.Reply{Content: "Bye!"})
	hold := make(chan struct{})
	extractor := fakellm.Start(t, fakellm.Reply{Wait: hold})
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf(`
llms:
  fake: {base_url: %q, model: fake-model}
  small: {base_url: %q, model: small-1}
agents:
  assistant:
    app: a
    llm: fake
    instruction: You remember what users told you.
    facts: {enabled: true, extract: true}
server:
  data_dir: %s
  sessions: {backend: inmemory}
  facts: {backend: inmemory}
  index: {type: keyword, persist: false}
  extraction: {llm: small, every_turns: 1}
  auth:
    api_keys:
      - {name: alice, key: %s, role: user, app: a, user: alice}
`, agentModel.URL, extractor.URL, t.TempDir(), aliceKey)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := app.Open(t.Context(), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svcs.Close() })
	s, err := New(svcs, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "message": "I live in Lisbon"})
	if w.Code != 200 {
		t.Fatalf("the first turn: %d %s", w.Code, w.Body)
	}
	var first struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(w.Body.Bytes(), &first)
	select { // the extraction of that turn is under way, and the model holds it
	case <-extractor.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn was not extracted")
	}
	w = do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "session_id": first.SessionID, "message": "I like jazz"})
	if w.Code != 200 || !strings.Contains(w.Body.String(), "Noted again.") {
		t.Fatalf("a turn while extraction hangs: %d %s", w.Code, w.Body)
	}
	close(hold) // the held answer, then 500s for what follows: turns go on
	w = do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "session_id": first.SessionID, "message": "Bye"})
	if w.Code != 200 {
		t.Errorf("a turn while extraction fails: %d %s", w.Code, w.Body)
	}
}
