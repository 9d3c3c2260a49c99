package server

import (
	"net/http"

	"github.com/hectormem/hector/pkg/facts"
)

// The REST surface reaches the path's user scope only.
func userFacts(r *http.Request) facts.Scope {
	return facts.UserScope(r.PathValue("app"), r.PathValue("user"))
}

func (s *Server) storeFact(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Key        string   `json:"key"`
		Value      string   `json:"value"`
		Category   string   `json:"category"`
		Tags       []string `json:"tags"`
		TTLSeconds int64    `json:"ttl_seconds"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	ttl, err := facts.TTLSeconds(req.TTLSeconds)
	if err != nil {
		return err
	}
	f, err := s.svcs.Facts.Store(r.Context(), userFacts(r), facts.StoreRequest{Key: req.Key, Value: req.Value, Category: req.Category,
		Tags: req.Tags, TTL: ttl})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, f)
	return nil
}

func (s *Server) listFacts(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	fs, err := s.svcs.Facts.List(r.Context(), userFacts(r), q.Get("prefix"), q.Get("category"))
	if err != nil {
		return err
	}
	if fs == nil {
		fs = []facts.Fact{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"facts": fs})
	return nil
}

func (s *Server) getFact(w http.ResponseWriter, r *http.Request) error {
	f, err := s.svcs.Facts.Recall(r.Context(), userFacts(r), r.PathValue("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

func (s *Server) deleteFact(w http.ResponseWriter, r *http.Request) error {
	if err := s.svcs.Facts.Delete(r.Context(), userFacts(r), r.PathValue("key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) forgetFacts(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Selector string `json:"selector"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	n, err := s.svcs.Facts.Forget(r.Context(), userFacts(r), req.Selector)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"removed": n})
	return nil
}

func (s *Server) factsSummary(w http.ResponseWriter, r *http.Request) error {
	sum, err := s.svcs.Facts.Summarize(r.Context(), userFacts(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sum)
	return nil
}
