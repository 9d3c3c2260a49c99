package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/index"
)

// slowEmbeddings is an OpenAI-compatible /v1/embeddings endpoint that
// answers a search's query at once and holds documents until released, as
// an API under load may: it stands for any embedder too slow for an append
// to wait on.
type slowEmbeddings struct {
	query string
	once  sync.Once
	open  chan struct{}
}

func (f *slowEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Input []string }
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if len(req.Input) != 1 || req.Input[0] != f.query {
		select {
		case <-f.open:
		case <-r.Context().Done():
			return
		}
	}
	type datum struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Data []datum `json:"data"`
	}{}
	for i, text := range req.Input {
		v := make([]float32, 8)
		for j, r := range text {
			v[(j+int(r))%8] += 1
		}
		out.Data = append(out.Data, datum{i, v})
	}
	json.NewEncoder(w).Encode(out)
}

func (f *slowEmbeddings) release() { f.once.Do(func() { close(f.open) }) }

// With vectors embedded in the background, an append through the API
// returns before its embedder answers, a search finds the event by its
// words at once, and /v1/index and /metrics say how many changes have no
// vectors yet, until the embedder answers.
func TestVectorLagIsVisible(t *testing.T) {
	fake := &slowEmbeddings{query: "zeppelin", open: make(chan struct{})}
	api := httptest.NewServer(fake)
	defer api.Close()
	defer fake.release()
	t.Setenv("HECTOR_TEST_EMBEDDING_KEY", "k")
	s := newTestServer(t, func(c *config.Config) {
		c.Server.Index.Type, c.Server.Index.Embedder, c.Server.Index.Vectors = index.KindHybrid, "api", "background"
	}, fmt.Sprintf(`
embedders:
  api: {type: openai, base_url: %s/v1, model: m, dimensions: 8, api_key_env: HECTOR_TEST_EMBEDDING_KEY}
`, api.URL))
	lags := func() (int64, int64, string) {
		t.Helper()
		w := do(t, s, "GET", "/v1/index", adminKey, nil)
		var status struct {
			Lag       *int64
			VectorLag *int64 `json:"vector_lag"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &status); err != nil || status.Lag == nil || status.VectorLag == nil {
			t.Fatalf("GET /v1/index: %d %s", w.Code, w.Body)
		}
		metrics := do(t, s, "GET", "/metrics", adminKey, nil).Body.String()
		return *status.Lag, *status.VectorLag, metrics
	}

	if w := do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"}); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	event := map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "two zeppelin tickets"}}}}
	if w := do(t, s, "POST", "/v1/apps/a/users/alice/sessions/s/events", adminKey, event); w.Code != 201 {
		t.Fatalf("append: %d %s", w.Code, w.Body)
	}
	w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", adminKey, map[string]any{"query": "zeppelin"})
	if w.Code != 200 || !strings.Contains(w.Body.String(), "two zeppelin tickets") {
		t.Fatalf("search right after the append: %d %s", w.Code, w.Body)
	}
	terms, vectors, metrics := lags()
	if terms != 0 || vectors != 1 || !strings.Contains(metrics, "hector_index_vector_lag_changes 1") {
		t.Fatalf("while the embedder holds the document: lag %d, vector_lag %d; metrics:\n%s", terms, vectors, metrics)
	}

	fake.release()
	if err := s.svcs.Index.(*index.Index).AwaitVectors(t.Context()); err != nil {
		t.Fatal(err)
	}
	if terms, vectors, metrics = lags(); terms != 0 || vectors != 0 || !strings.Contains(metrics, "hector_index_vector_lag_changes 0") {
		t.Fatalf("after the embedder answered: lag %d, vector_lag %d", terms, vectors)
	}
}
