package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/index"
)

// heldEmbedder embeds the queries it names at once and every other text
// once released: vectors wait behind the terms, as after a change of
// embedder that embeds everything again.
type heldEmbedder struct {
	embed.Embedder
	queries  map[string]bool
	released chan struct{}
}

func (h *heldEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) != 1 || !h.queries[texts[0]] {
		select {
		case <-h.released:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Embedder.Embed(ctx, texts)
}

// While changes wait for their vectors, /readyz stays ready and says how
// many, searches answer by words meanwhile, and once every vector is
// written /readyz says nothing of it.
func TestReadyzSaysHowManyChangesWaitForVectors(t *testing.T) {
	ctx := t.Context()
	hash, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	held := &heldEmbedder{Embedder: hash, queries: map[string]bool{"zeppelin": true}, released: make(chan struct{})}
	s := newTestServer(t, nil)
	s.svcs.Index.Close()
	idx, err := index.NewHybrid(held, index.WithSessions(s.svcs.Sessions), index.WithBackgroundVectors(1000), index.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.svcs.Index = idx
	if s, err = New(s.svcs, s.cfg, quiet); err != nil {
		t.Fatal(err)
	}
	u := "/v1/apps/a/users/alice"
	do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"})
	for _, text := range []string{"a zeppelin over the bay", "a lighthouse on the cape", "the ferry leaves at nine"} {
		if w := do(t, s, "POST", u+"/sessions/s/events", adminKey, map[string]any{"author": "user",
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}}); w.Code != 201 {
			t.Fatalf("append: %d %s", w.Code, w.Body)
		}
	}
	var ready struct {
		Status    string `json:"status"`
		Embedding *struct {
			ChangesBehind int64 `json:"changes_behind"`
		} `json:"index_embedding"`
	}
	w := do(t, s, "GET", "/readyz", "", nil)
	if err := json.Unmarshal(w.Body.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	if w.Code != 200 || ready.Status != "ok" || ready.Embedding == nil || ready.Embedding.ChangesBehind != 3 {
		t.Fatalf("/readyz with 3 changes waiting for vectors = %d %s; want ready, index_embedding 3 changes behind", w.Code, w.Body)
	}
	if w := do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "zeppelin"}); w.Code != 200 || !strings.Contains(w.Body.String(), "a zeppelin over the bay") {
		t.Errorf("search while vectors wait = %d %s; want the turn, found by its words", w.Code, w.Body)
	}
	close(held.released)
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	ready.Embedding = nil
	w = do(t, s, "GET", "/readyz", "", nil)
	if err := json.Unmarshal(w.Body.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	if w.Code != 200 || ready.Embedding != nil {
		t.Errorf("/readyz once every vector is written = %d %s; want ready, without index_embedding", w.Code, w.Body)
	}
}

// Erasing the user who holds the newest changes leaves the index's lag at
// 0, not below: something waiting for it to reach 0 would wait forever
// (finding 6 of issue 71).
func TestLagIsNeverNegativeAfterErasingTheNewestChanges(t *testing.T) {
	s := serverOn(t, "sqlite", t.TempDir()+"/hector.db", nil)
	for _, user := range []string{"alice", "bob"} { // bob's changes are the newest
		u := "/v1/apps/a/users/" + user
		do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"})
		for i := range 3 {
			do(t, s, "POST", u+"/sessions/s/events", adminKey, map[string]any{"author": "user",
				"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": fmt.Sprintf("turn %d", i)}}}})
		}
	}
	if w := do(t, s, "DELETE", "/v1/apps/a/users/bob", adminKey, nil); w.Code != 200 {
		t.Fatalf("erasing bob: %d %s", w.Code, w.Body)
	}
	if err := s.svcs.Index.CatchUp(t.Context(), s.svcs.Sessions); err != nil {
		t.Fatal(err)
	}
	var status struct{ Lag *int64 }
	w := do(t, s, "GET", "/v1/index", adminKey, nil)
	if json.Unmarshal(w.Body.Bytes(), &status); status.Lag == nil || *status.Lag != 0 {
		t.Errorf("the index's lag after erasing the newest changes: %s", w.Body)
	}
}
