package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/hectormem/hector/internal/timearg"
	"github.com/hectormem/hector/pkg/extract"
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
		Merge      bool     `json:"merge_duplicates"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	ttl, err := facts.TTLSeconds(req.TTLSeconds)
	if err != nil {
		return err
	}
	by := facts.Source{Kind: facts.SourceWritten, By: principalOf(r.Context()).role}
	f, err := s.svcs.Facts.Store(r.Context(), userFacts(r), facts.StoreRequest{Key: req.Key, Value: req.Value, Category: req.Category,
		Tags: req.Tags, TTL: ttl, Source: by, MergeDuplicates: req.Merge})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, f)
	return nil
}

// asOf reads the as_of query parameter: zero when absent.
func asOf(r *http.Request) (time.Time, error) {
	v, ok, err := param(r, "as_of")
	if !ok || err != nil {
		return time.Time{}, err
	}
	t, err := timearg.Parse(v)
	if err != nil {
		return time.Time{}, badRequest("query parameter as_of: %v", err)
	}
	return t, nil
}

func (s *Server) listFacts(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	at, err := asOf(r)
	if err != nil {
		return err
	}
	var fs []facts.Fact
	if at.IsZero() {
		fs, err = s.svcs.Facts.List(r.Context(), userFacts(r), q.Get("prefix"), q.Get("category"))
	} else {
		fs, err = s.svcs.Facts.ListAt(r.Context(), userFacts(r), q.Get("prefix"), q.Get("category"), at)
	}
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
	at, err := asOf(r)
	if err != nil {
		return err
	}
	var f *facts.Fact
	if at.IsZero() {
		f, err = s.svcs.Facts.Recall(r.Context(), userFacts(r), r.PathValue("key"))
	} else {
		f, err = s.svcs.Facts.RecallAt(r.Context(), userFacts(r), r.PathValue("key"), at)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

// factHistory lists a key's versions, oldest first. The key is a query
// parameter: keys hold "/" (deploy/tool), so a path of the key with
// /history after it could name another key.
func (s *Server) factHistory(w http.ResponseWriter, r *http.Request) error {
	key := r.URL.Query().Get("key")
	if key == "" {
		return badRequest("query parameter key is missing: GET …/facts:history?key=deploy/tool")
	}
	versions, err := s.svcs.Facts.History(r.Context(), userFacts(r), key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"versions": versions})
	return nil
}

// invalidateFact ends a fact's current value: it no longer holds, and
// stays in the key's history.
func (s *Server) invalidateFact(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Key string `json:"key"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Key == "" {
		return badRequest("field \"key\" is empty")
	}
	f, err := s.svcs.Facts.Invalidate(r.Context(), userFacts(r), req.Key)
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

// extractMemories learns facts from the session's messages in (after_seq,
// to_seq] with the configured model. A spent budget is a 429 that says
// when to try again.
func (s *Server) extractMemories(w http.ResponseWriter, r *http.Request) error {
	if s.svcs.Extractor == nil {
		return &apiError{http.StatusConflict, "extraction_off", "extraction is off: set server.extraction.llm to one of the llms entries"}
	}
	var req struct {
		AfterSeq int64 `json:"after_seq"`
		ToSeq    int64 `json:"to_seq"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	res, err := s.svcs.Extractor.Extract(r.Context(), extract.Request{AppName: r.PathValue("app"), UserID: r.PathValue("user"),
		SessionID: r.PathValue("id"), AfterSeq: req.AfterSeq, ToSeq: req.ToSeq})
	var spent *extract.BudgetError
	if errors.As(err, &spent) {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(spent.RetryAfter().Seconds(), 1))))
		return &apiError{http.StatusTooManyRequests, "budget_spent", spent.Error()}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// extractionStatus says whether extraction is on and, if so, what it spent.
func (s *Server) extractionStatus(w http.ResponseWriter, r *http.Request) error {
	if s.svcs.Extractor == nil {
		writeJSON(w, http.StatusOK, map[string]any{"enabled": false})
		return nil
	}
	writeJSON(w, http.StatusOK, struct {
		Enabled bool `json:"enabled"`
		extract.Status
	}{true, s.svcs.Extractor.Status()})
	return nil
}
