package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hectormem/hector/internal/retry"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestHash(t *testing.T) {
	h, err := NewHash(0)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := h.Embed(t.Context(), []string{"deploy the app to production", "Deployment of apps to production", "banana bread recipe", ""})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs[:3] {
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if len(v) != DefaultHashDimensions || math.Abs(norm-1) > 1e-5 {
			t.Errorf("vector %d: %d dimensions, norm² %f; want %d and 1", i, len(v), norm, DefaultHashDimensions)
		}
	}
	if near, far := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2]); near <= far+0.2 {
		t.Errorf("related texts at %.3f, unrelated at %.3f: sharing words should bring texts closer", near, far)
	}
	again, _ := h.Embed(t.Context(), []string{"deploy the app to production"})
	if cosine(again[0], vecs[0]) < 0.999999 {
		t.Error("the hashing embedder is not deterministic")
	}
	if h.Fingerprint() != "hash/v1/384" {
		t.Errorf("fingerprint %q", h.Fingerprint())
	}
	for _, bad := range []int{-1, 8, 100000} {
		if _, err := NewHash(bad); err == nil {
			t.Errorf("NewHash(%d): no error", bad)
		}
	}
}

// fakeAPI is an in-process embedding server speaking the OpenAI or Ollama
// wire format. Scripted statuses are answered first, one per request.
type fakeAPI struct {
	t        *testing.T
	ollama   bool
	dims     int
	key      string
	mu       sync.Mutex
	requests []map[string]any
	script   []int
	delay    time.Duration
	errBody  string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wantPath := "/v1/embeddings"
	if f.ollama {
		wantPath = "/api/embed"
	}
	if r.Method != http.MethodPost || r.URL.Path != wantPath || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	var status int
	if len(f.script) > 0 {
		status, f.script = f.script[0], f.script[1:]
	}
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(f.delay):
		}
	}
	if status != 0 {
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(status)
		if f.ollama {
			fmt.Fprintf(w, `{"error":%q}`, f.errBody)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error"}}`, f.errBody)
		}
		return
	}
	inputs, _ := body["input"].([]any)
	vec := func(i int) []float32 { // each input's vector says which input it was
		v := make([]float32, f.dims)
		v[0] = float32(len(inputs[i].(string)))
		return v
	}
	if f.ollama {
		var embs [][]float32
		for i := range inputs {
			embs = append(embs, vec(i))
		}
		json.NewEncoder(w).Encode(map[string]any{"model": body["model"], "embeddings": embs})
		return
	}
	var data []map[string]any
	for i := len(inputs) - 1; i >= 0; i-- { // out of order, as the API allows
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vec(i)})
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": body["model"]})
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func newFake(t *testing.T, ollama bool) (*fakeAPI, HTTPConfig) {
	retry.Base = time.Millisecond
	f := &fakeAPI{t: t, ollama: ollama, dims: 8, key: "sk-test-secret-123"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	base := srv.URL + "/v1"
	if ollama {
		base = srv.URL
	}
	return f, HTTPConfig{BaseURL: base, Model: "m1", APIKey: f.key, Dimensions: 8, BatchSize: 2, Timeout: 2 * time.Second}
}

func embedders(t *testing.T, cfg HTTPConfig, ollama bool) Embedder {
	t.Helper()
	var e Embedder
	var err error
	if ollama {
		e, err = NewOllama(cfg)
	} else {
		e, err = NewOpenAI(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func forBoth(t *testing.T, fn func(t *testing.T, ollama bool)) {
	for _, ollama := range []bool{false, true} {
		name := "openai"
		if ollama {
			name = "ollama"
		}
		t.Run(name, func(t *testing.T) { fn(t, ollama) })
	}
}

func TestHTTPEmbeddersBatchInOrder(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
		vecs, err := embedders(t, cfg, ollama).Embed(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vecs {
			if int(v[0]) != len(texts[i]) {
				t.Errorf("vector %d belongs to input of length %v", i, v[0])
			}
		}
		if f.count() != 3 {
			t.Errorf("%d requests for 5 texts in batches of 2, want 3", f.count())
		}
		if f.requests[0]["model"] != "m1" || len(f.requests[0]["input"].([]any)) != 2 {
			t.Errorf("request body = %v", f.requests[0])
		}
	})
}

func TestHTTPEmbeddersRetry(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		f.script = []int{429, 503, 500}
		if _, err := embedders(t, cfg, ollama).Embed(t.Context(), []string{"x"}); err != nil {
			t.Fatalf("after 429, 503 and 500: %v", err)
		}
		if f.count() != 4 {
			t.Errorf("%d requests, want 4 (three retried)", f.count())
		}

		f, cfg = newFake(t, ollama)
		cfg.MaxRetries = 2
		f.script = []int{500, 500, 500, 500}
		f.errBody = "overloaded"
		_, err := embedders(t, cfg, ollama).Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "overloaded") {
			t.Errorf("error after retries ran out = %v", err)
		}
		if f.count() != 3 {
			t.Errorf("%d requests with MaxRetries 2, want 3", f.count())
		}
	})
}

func TestHTTPEmbeddersDoNotRetryClientErrors(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		f.script = []int{404}
		f.errBody = "model \"m1\" not found"
		_, err := embedders(t, cfg, ollama).Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "not found") || f.count() != 1 {
			t.Errorf("404: error %v after %d requests; want the message, once", err, f.count())
		}
	})
}

func TestHTTPEmbeddersNeverShowTheKey(t *testing.T) {
	_, cfg := newFake(t, false)
	cfg.APIKey = "sk-wrong-key-456" // the fake quotes the refused key, as OpenAI does
	_, err := embedders(t, cfg, false).Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong key: error %v", err)
	}
	if strings.Contains(err.Error(), "sk-wrong-key-456") {
		t.Errorf("the error shows the API key: %v", err)
	}
}

func TestHTTPEmbeddersTimeout(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		f.delay = time.Minute
		cfg.Timeout = 50 * time.Millisecond
		cfg.MaxRetries = 1
		start := time.Now()
		_, err := embedders(t, cfg, ollama).Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("timed-out request: error %v", err)
		}
		if f.count() != 2 {
			t.Errorf("%d attempts, want 2 (a timeout is retried once)", f.count())
		}
		if time.Since(start) > 30*time.Second {
			t.Error("the timeout did not bound the request")
		}
	})
}

func TestHTTPEmbeddersCheckDimensions(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		f.dims = 4
		_, err := embedders(t, cfg, ollama).Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), "4 dimensions") {
			t.Errorf("wrong dimensions: error %v", err)
		}
	})
}

func TestHTTPConfigErrors(t *testing.T) {
	for what, cfg := range map[string]HTTPConfig{
		"no base URL":   {Model: "m", Dimensions: 8},
		"no model":      {BaseURL: "http://x", Dimensions: 8},
		"no dimensions": {BaseURL: "http://x", Model: "m"},
		"bad retries":   {BaseURL: "http://x", Model: "m", Dimensions: 8, MaxRetries: -1},
	} {
		if _, err := NewOpenAI(cfg); err == nil {
			t.Errorf("NewOpenAI with %s: no error", what)
		}
	}
}

// TestRealEndpoints runs against real services when their addresses are given:
// HECTOR_TEST_OPENAI_BASE_URL (with _MODEL, _DIMENSIONS and _API_KEY) and
// HECTOR_TEST_OLLAMA_URL (with _MODEL and _DIMENSIONS).
func TestRealEndpoints(t *testing.T) {
	for _, p := range []string{"OPENAI", "OLLAMA"} {
		base := os.Getenv("HECTOR_TEST_" + p + "_BASE_URL")
		if p == "OLLAMA" {
			base = os.Getenv("HECTOR_TEST_OLLAMA_URL")
		}
		t.Run(strings.ToLower(p), func(t *testing.T) {
			if base == "" {
				t.Skipf("opt-in: set HECTOR_TEST_%s_* to run against a real embedding API", p)
			}
			dims, _ := strconv.Atoi(os.Getenv("HECTOR_TEST_" + p + "_DIMENSIONS"))
			cfg := HTTPConfig{BaseURL: base, Model: os.Getenv("HECTOR_TEST_" + p + "_MODEL"), APIKey: os.Getenv("HECTOR_TEST_" + p + "_API_KEY"), Dimensions: dims}
			e := embedders(t, cfg, p == "OLLAMA")
			vecs, err := e.Embed(context.Background(), []string{"the cat sat on the mat", "a kitten rested on the rug", "quarterly tax filing"})
			if err != nil {
				t.Fatal(err)
			}
			if cosine(vecs[0], vecs[1]) <= cosine(vecs[0], vecs[2]) {
				t.Error("the model does not put related sentences closer")
			}
		})
	}
}

func TestHTTPEmbeddersMarkQueriesAndDocuments(t *testing.T) {
	forBoth(t, func(t *testing.T, ollama bool) {
		f, cfg := newFake(t, ollama)
		plain := embedders(t, cfg, ollama)
		provider := map[bool]string{false: "openai", true: "ollama"}[ollama]
		if got, want := plain.Fingerprint(), provider+"/"+cfg.BaseURL+"/m1/8"; got != want {
			t.Errorf("unmarked fingerprint %q, want %q as before marks existed (else old indexes are embedded again)", got, want)
		}
		cfg.QueryPrefix, cfg.DocumentPrefix = "query: ", "passage: "
		e := embedders(t, cfg, ollama)
		if _, err := e.Embed(t.Context(), []string{"a turn"}); err != nil {
			t.Fatal(err)
		}
		if _, err := Queries(t.Context(), e, []string{"a question", "another"}); err != nil {
			t.Fatal(err)
		}
		if _, err := Queries(t.Context(), plain, []string{"bare"}); err != nil {
			t.Fatal(err)
		}
		var inputs []any
		for _, r := range f.requests {
			inputs = append(inputs, r["input"].([]any)...)
		}
		want := []any{"passage: a turn", "query: a question", "query: another", "bare"}
		if !reflect.DeepEqual(inputs, want) {
			t.Errorf("inputs sent %q, want %q", inputs, want)
		}

		fingerprints := map[string]bool{plain.Fingerprint(): true, e.Fingerprint(): true}
		for _, marks := range [][2]string{{"query: ", ""}, {"", "query: "}, {"query:", " passage: "}} {
			cfg.QueryPrefix, cfg.DocumentPrefix = marks[0], marks[1]
			fingerprints[embedders(t, cfg, ollama).Fingerprint()] = true
		}
		if len(fingerprints) != 5 {
			t.Errorf("five markings made %d fingerprints, want 5: vectors of texts marked otherwise must not be compared", len(fingerprints))
		}
	})
}
