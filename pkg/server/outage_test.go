package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/internal/fakeqdrant"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/qdrant"
)

// serverOnIndex is a test server whose index is idx.
func serverOnIndex(t *testing.T, idx index.Live) *Server {
	t.Helper()
	s := newTestServer(t, nil)
	s.svcs.Index.Close()
	s.svcs.Index = idx
	s, err := New(s.svcs, s.cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// One document the store refuses does not stall the index: it is skipped,
// and /v1/index, /readyz and /metrics say so. A store that is down answers
// 503 with Retry-After, and /readyz names it.
func TestIndexStoreRefusalsAndOutages(t *testing.T) {
	fake := fakeqdrant.Start(t)
	qs, err := qdrant.New(qdrant.Config{Host: fake.Host, Port: fake.Port, Collection: "outage_test"})
	if err != nil {
		t.Fatal(err)
	}
	store := indextest.NewRefusing(qs)
	idx, err := index.New("keyword", store, nil, nil, index.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	s := serverOnIndex(t, idx)
	u := "/v1/apps/a/users/alice"
	do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"})
	for _, text := range []string{"a poison zeppelin", "the zeppelin lands at dusk"} {
		if w := do(t, s, "POST", u+"/sessions/s/events", adminKey, map[string]any{"author": "user",
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}}); w.Code != 201 {
			t.Fatalf("append: %d %s", w.Code, w.Body)
		}
	}
	if err := idx.CatchUp(t.Context(), s.svcs.Sessions); err != nil {
		t.Fatalf("catching up past a refused document: %v", err)
	}

	var status struct {
		Lag     int64       `json:"lag"`
		Skipped index.Skips `json:"skipped"`
	}
	w := do(t, s, "GET", "/v1/index", adminKey, nil)
	if err := json.Unmarshal(w.Body.Bytes(), &status); err != nil {
		t.Fatal(err)
	}
	if status.Lag != 0 || status.Skipped.Total != 1 || len(status.Skipped.Recent) != 1 || status.Skipped.Recent[0].SessionID != "s" {
		t.Errorf("/v1/index = %s, want lag 0 and the one skipped document of session s", w.Body)
	}
	if w := do(t, s, "GET", "/readyz", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), `"index_skipped_documents":1`) {
		t.Errorf("/readyz = %d %s, want 200 counting the skipped document", w.Code, w.Body)
	}
	if w := do(t, s, "GET", "/metrics", adminKey, nil); !strings.Contains(w.Body.String(), "hector_index_skipped_documents_total 1") {
		t.Error("/metrics does not count the skipped document")
	}

	fake.SetDown(true)
	w = do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "zeppelin"})
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"unavailable"`) {
		t.Errorf("search with the index store down = %d %s (Retry-After %q), want 503 unavailable with Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	w = do(t, s, "GET", "/readyz", "", nil)
	var ready struct {
		Unavailable []string `json:"unavailable"`
	}
	json.Unmarshal(w.Body.Bytes(), &ready)
	if w.Code != 503 || !slices.Equal(ready.Unavailable, []string{"index"}) || w.Header().Get("Retry-After") == "" {
		t.Errorf("/readyz with the index store down = %d %s, want 503 naming the index", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), fake.Host) {
		t.Errorf("/readyz, which needs no credential, tells the store's address: %s", w.Body)
	}
	fake.SetDown(false)
	if w := do(t, s, "GET", "/readyz", "", nil); w.Code != 200 {
		t.Errorf("/readyz once the store is back = %d %s", w.Code, w.Body)
	}
}
