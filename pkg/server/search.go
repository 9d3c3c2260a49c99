package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hectormem/hector/internal/timearg"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/recall"
)

func (s *Server) searchMemory(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
		index.FilterArgs
		RecencyHalfLife string `json:"recency_half_life"`
		AsOf            string `json:"as_of"`
		FullContent     bool   `json:"full_content"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Query == "" {
		return badRequest("field \"query\" is empty")
	}
	filter, err := req.Filter()
	if err != nil {
		return err
	}
	var halfLife time.Duration
	if req.RecencyHalfLife != "" {
		if halfLife, err = index.ParseHalfLife(req.RecencyHalfLife); err != nil {
			return err
		}
	}
	var asOf time.Time
	if req.AsOf != "" {
		if asOf, err = timearg.Parse(req.AsOf); err != nil {
			return badRequest("field \"as_of\": %v", err)
		}
	}
	start := time.Now()
	// The scope is the path's, which auth has checked: the body cannot widen it.
	req2 := recall.Request{Query: req.Query, App: r.PathValue("app"), User: r.PathValue("user"), Limit: req.Limit,
		Filter: filter, RecencyHalfLife: halfLife, AsOf: asOf}
	if !req.FullContent {
		req2.Snippet = snippetChars
	}
	found, err := recall.Memory{Index: s.svcs.Index, Facts: s.svcs.Facts}.Recall(r.Context(), req2)
	if err != nil {
		return err
	}
	s.metrics.searchLatency.Observe(time.Since(start).Seconds())
	out := map[string]any{"results": found.Messages}
	if found.Facts != nil {
		out["facts"] = found.Facts
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// snippetChars bounds a result's content unless full_content asks for
// it whole: a search over a 1 MB message need not answer 1 MB.
const snippetChars = 1000

// rebuildState is the latest rebuild started through the API.
type rebuildState struct {
	mu     sync.Mutex
	status rebuildStatus
}

type rebuildStatus struct {
	State    string         `json:"state"` // idle, running, done, failed
	App      string         `json:"app,omitempty"`
	User     string         `json:"user,omitempty"`
	Progress index.Progress `json:"progress"`
	Error    string         `json:"error,omitempty"`
	Started  *time.Time     `json:"started,omitempty"`
	Finished *time.Time     `json:"finished,omitempty"`
}

func (s *Server) startRebuild(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		App  string `json:"app"`
		User string `json:"user"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	if req.User != "" && req.App == "" {
		return badRequest("field \"user\" needs \"app\" too")
	}
	for _, f := range [][2]string{{"app name", req.App}, {"user ID", req.User}} {
		if f[1] != "" {
			if err := ident.Check(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	s.rebuild.mu.Lock()
	if s.rebuild.status.State == "running" {
		s.rebuild.mu.Unlock()
		return &apiError{http.StatusConflict, "conflict", "a rebuild is running: see GET /v1/index:rebuild"}
	}
	now := time.Now().UTC()
	s.rebuild.status = rebuildStatus{State: "running", App: req.App, User: req.User, Started: &now}
	status := s.rebuild.status
	s.rebuild.mu.Unlock()

	go func() {
		// Not the request's context: the rebuild outlives the request.
		ctx := index.WithRebuildProgress(context.Background(), func(p index.Progress) {
			s.rebuild.mu.Lock()
			s.rebuild.status.Progress = p
			s.rebuild.mu.Unlock()
		})
		err := s.svcs.Index.Rebuild(ctx, s.svcs.Sessions, req.App, req.User)
		s.rebuild.mu.Lock()
		defer s.rebuild.mu.Unlock()
		done := time.Now().UTC()
		s.rebuild.status.Finished = &done
		s.rebuild.status.State = "done"
		if err != nil {
			s.rebuild.status.State, s.rebuild.status.Error = "failed", err.Error()
			s.logger.Error("index rebuild failed", "error", err)
		}
	}()
	writeJSON(w, http.StatusAccepted, status)
	return nil
}

func (s *Server) rebuildStatus(w http.ResponseWriter, r *http.Request) error {
	s.rebuild.mu.Lock()
	status := s.rebuild.status
	s.rebuild.mu.Unlock()
	if status.State == "" {
		status.State = "idle"
	}
	writeJSON(w, http.StatusOK, status)
	return nil
}

// Follow keeps the index caught up with the change feed until ctx ends:
// what the append handler did not index (another process wrote, or indexing
// failed) arrives within a period.
func (s *Server) Follow(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := s.svcs.Index.CatchUp(ctx, s.svcs.Sessions); err != nil && ctx.Err() == nil {
			s.logger.Warn("index catch-up failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
