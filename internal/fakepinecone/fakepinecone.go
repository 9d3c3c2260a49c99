// Package fakepinecone is an in-process Pinecone index for tests: an HTTP
// server speaking the data-plane REST API Hector uses (upsert, query,
// fetch, list, delete, describe_index_stats) with Pinecone's semantics:
// namespaces that exist while they hold vectors, cosine scores, ID-prefix
// listing with pagination tokens, a fixed dimension, the API key checked,
// and refusals worded as Pinecone words them.
package fakepinecone

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is a running fake index.
type Server struct {
	URL    string
	APIKey string
	Dims   int

	mu         sync.Mutex
	namespaces map[string]map[string]*vector
	requests   []Request
}

// Request is one data-plane request: its path and the namespace it named.
type Request struct {
	Path, Namespace string
}

type vector struct {
	ID       string         `json:"id"`
	Values   []float32      `json:"values,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Start runs a fake index of dims dimensions until t ends; with dims 0 the
// index takes the dimension of its first vector, as if it had been made
// for the embedder that wrote it.
func Start(t testing.TB, dims int) *Server {
	s := &Server{APIKey: "pcsk_test_key_0123456789", Dims: dims, namespaces: map[string]map[string]*vector{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /describe_index_stats", s.stats)
	mux.HandleFunc("POST /vectors/upsert", s.upsert)
	mux.HandleFunc("POST /query", s.query)
	mux.HandleFunc("GET /vectors/fetch", s.fetch)
	mux.HandleFunc("GET /vectors/list", s.list)
	mux.HandleFunc("POST /vectors/delete", s.delete)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Api-Key") != s.APIKey {
			fail(w, http.StatusUnauthorized, "Invalid API Key")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Requests returns the data-plane requests so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Namespaces returns the namespaces that hold vectors.
func (s *Server) Namespaces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ns, vs := range s.namespaces {
		if len(vs) > 0 {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// Dump returns every vector of every namespace, with its metadata and
// values, one line each, in a stable order: what a test reads to see what
// is stored, not what the API answers. A namespace without vectors is
// not there, as in Pinecone.
func (s *Server) Dump() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ns, vs := range s.namespaces {
		for id, v := range vs {
			meta, _ := json.Marshal(v.Metadata) // keys in order
			out = append(out, fmt.Sprintf("vector %s %s %s %v", ns, id, meta, v.Values))
		}
	}
	slices.Sort(out)
	return out
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": http.StatusText(status), "message": msg}, "status": status})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "Invalid request body: "+err.Error())
		return false
	}
	return true
}

// record notes a request; s.mu is held.
func (s *Server) record(path, ns string) { s.requests = append(s.requests, Request{path, ns}) }

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("/describe_index_stats", "")
	namespaces := map[string]any{}
	total := 0
	for ns, vs := range s.namespaces {
		if len(vs) > 0 {
			namespaces[ns] = map[string]any{"vectorCount": len(vs)}
			total += len(vs)
		}
	}
	reply(w, map[string]any{"namespaces": namespaces, "dimension": s.Dims, "indexFullness": 0, "totalVectorCount": total, "metric": "cosine"})
}

func (s *Server) upsert(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vectors   []vector `json:"vectors"`
		Namespace string   `json:"namespace"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("/vectors/upsert", req.Namespace)
	if len(req.Vectors) > 1000 {
		fail(w, http.StatusBadRequest, "Batch size exceeds the limit of 1000 vectors")
		return
	}
	for _, v := range req.Vectors { // all or nothing
		if s.Dims == 0 {
			s.Dims = len(v.Values)
		}
		if len(v.Values) != s.Dims {
			fail(w, http.StatusBadRequest, "Vector dimension "+strconv.Itoa(len(v.Values))+" does not match the dimension of the index "+strconv.Itoa(s.Dims))
			return
		}
		if v.ID == "" || len(v.ID) > 512 {
			fail(w, http.StatusBadRequest, "Vector ID must be between 1 and 512 characters")
			return
		}
		if raw, _ := json.Marshal(v.Metadata); len(raw) > 40*1024 {
			fail(w, http.StatusBadRequest, "Metadata size exceeds the limit of 40960 bytes per vector")
			return
		}
	}
	if s.namespaces[req.Namespace] == nil {
		s.namespaces[req.Namespace] = map[string]*vector{}
	}
	for _, v := range req.Vectors {
		v := v
		s.namespaces[req.Namespace][v.ID] = &v
	}
	reply(w, map[string]any{"upsertedCount": len(req.Vectors)})
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace       string         `json:"namespace"`
		Vector          []float32      `json:"vector"`
		TopK            int            `json:"topK"`
		IncludeMetadata bool           `json:"includeMetadata"`
		IncludeValues   bool           `json:"includeValues"`
		Filter          map[string]any `json:"filter"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("/query", req.Namespace)
	if len(req.Vector) != s.Dims {
		fail(w, http.StatusBadRequest, "Query vector dimension "+strconv.Itoa(len(req.Vector))+" does not match the dimension of the index "+strconv.Itoa(s.Dims))
		return
	}
	if req.TopK < 1 || req.TopK > 10000 {
		fail(w, http.StatusBadRequest, "topK must be between 1 and 10000")
		return
	}
	type match struct {
		ID       string         `json:"id"`
		Score    float64        `json:"score"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}
	if msg := checkFilter(req.Filter); msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	var matches []match
	for _, v := range s.namespaces[req.Namespace] {
		if !keeps(req.Filter, v.Metadata) {
			continue
		}
		m := match{ID: v.ID, Score: cosine(req.Vector, v.Values)}
		if req.IncludeMetadata {
			m.Metadata = v.Metadata
		}
		matches = append(matches, m)
	}
	slices.SortFunc(matches, func(a, b match) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID)) })
	matches = matches[:min(len(matches), req.TopK)]
	if matches == nil {
		matches = []match{}
	}
	reply(w, map[string]any{"matches": matches, "namespace": req.Namespace})
}

func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("/vectors/fetch", q.Get("namespace"))
	if len(q["ids"]) == 0 {
		fail(w, http.StatusBadRequest, "No IDs provided for fetch query")
		return
	}
	out := map[string]*vector{}
	for _, id := range q["ids"] {
		if v, ok := s.namespaces[q.Get("namespace")][id]; ok {
			out[id] = v
		}
	}
	reply(w, map[string]any{"vectors": out, "namespace": q.Get("namespace")})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := q.Get("namespace")
	s.record("/vectors/list", ns)
	limit := 100
	if l := q.Get("limit"); l != "" {
		limit, _ = strconv.Atoi(l)
	}
	var ids []string
	for id := range s.namespaces[ns] {
		if strings.HasPrefix(id, q.Get("prefix")) && id > q.Get("paginationToken") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := map[string]any{"namespace": ns}
	if len(ids) > limit {
		ids = ids[:limit]
		out["pagination"] = map[string]any{"next": ids[limit-1]}
	}
	vs := []map[string]string{}
	for _, id := range ids {
		vs = append(vs, map[string]string{"id": id})
	}
	out["vectors"] = vs
	reply(w, out)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IDs       []string       `json:"ids"`
		DeleteAll bool           `json:"deleteAll"`
		Namespace string         `json:"namespace"`
		Filter    map[string]any `json:"filter"`
	}
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("/vectors/delete", req.Namespace)
	vs := s.namespaces[req.Namespace]
	if len(vs) == 0 {
		fail(w, http.StatusNotFound, "Namespace not found")
		return
	}
	switch {
	case req.DeleteAll:
		delete(s.namespaces, req.Namespace)
	case len(req.IDs) > 0:
		for _, id := range req.IDs {
			delete(vs, id)
		}
	default:
		fail(w, http.StatusBadRequest, "Exactly one of ids, deleteAll or filter must be given")
		return
	}
	reply(w, map[string]any{})
}

// checkFilter says what Pinecone refuses of a metadata filter: an
// operator it does not know, a range on something not a number, $in
// without a list. (Pinecone knows $or, $ne, $nin and $exists too; Hector
// sends none, so this fake refuses them.)
func checkFilter(f map[string]any) string {
	for key, v := range f {
		if key == "$and" {
			list, ok := v.([]any)
			if !ok {
				return "Invalid filter: $and takes a list of filters"
			}
			for _, sub := range list {
				m, ok := sub.(map[string]any)
				if !ok {
					return "Invalid filter: $and takes a list of filters"
				}
				if msg := checkFilter(m); msg != "" {
					return msg
				}
			}
			continue
		}
		if strings.HasPrefix(key, "$") {
			return fmt.Sprintf("Invalid filter: unsupported operator %s", key)
		}
		ops, ok := v.(map[string]any)
		if !ok {
			continue // a value alone means $eq
		}
		for op, arg := range ops {
			switch op {
			case "$eq":
			case "$gt", "$gte", "$lt", "$lte":
				if _, ok := arg.(float64); !ok {
					return fmt.Sprintf("Invalid filter: %s operator must be used with a number", op)
				}
			case "$in":
				if _, ok := arg.([]any); !ok {
					return "Invalid filter: $in operator must be used with a list"
				}
			default:
				return fmt.Sprintf("Invalid filter: unsupported operator %s", op)
			}
		}
	}
	return ""
}

// keeps applies a checked filter to a vector's metadata. A range never
// keeps a value that is not a number, as in Pinecone.
func keeps(f map[string]any, md map[string]any) bool {
	for key, v := range f {
		if key == "$and" {
			for _, sub := range v.([]any) {
				if !keeps(sub.(map[string]any), md) {
					return false
				}
			}
			continue
		}
		ops, ok := v.(map[string]any)
		if !ok {
			ops = map[string]any{"$eq": v}
		}
		have, present := md[key]
		for op, arg := range ops {
			n, isNumber := have.(float64)
			bound, _ := arg.(float64)
			var ok bool
			switch op {
			case "$eq":
				ok = present && have == arg
			case "$in":
				ok = present && slices.Contains(arg.([]any), have)
			case "$gt":
				ok = isNumber && n > bound
			case "$gte":
				ok = isNumber && n >= bound
			case "$lt":
				ok = isNumber && n < bound
			case "$lte":
				ok = isNumber && n <= bound
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
