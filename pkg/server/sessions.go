package server

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/workingmemory"
)

type sessionJSON struct {
	ID             string           `json:"id"`
	Title          string           `json:"title,omitempty"`
	AppName        string           `json:"app_name"`
	UserID         string           `json:"user_id"`
	State          map[string]any   `json:"state"`
	Events         []*session.Event `json:"events,omitempty"`
	LastSeq        int64            `json:"last_seq"`
	LastUpdateTime time.Time        `json:"last_update_time"`
}

func toJSON(s session.Session) sessionJSON {
	out := sessionJSON{ID: s.ID(), Title: s.Title(), AppName: s.AppName(), UserID: s.UserID(), State: maps.Collect(s.State().All()),
		LastSeq: s.LastSeq(), LastUpdateTime: s.LastUpdateTime()}
	for ev := range s.Events().All() {
		out.Events = append(out.Events, ev)
	}
	return out
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		SessionID string         `json:"session_id"`
		Title     string         `json:"title"`
		State     map[string]any `json:"state"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	if err := principalOf(r.Context()).mayWriteState(req.State); err != nil {
		return err
	}
	resp, err := s.svcs.Sessions.Create(r.Context(), &session.CreateRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"), SessionID: req.SessionID,
		State: req.State, Title: req.Title})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toJSON(resp.Session))
	return nil
}

func intParam(r *http.Request, name string) (int, error) {
	v, ok, err := param(r, name)
	if !ok || err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest("query parameter %s=%q is not a whole number ≥ 0", name, v)
	}
	return n, nil
}

// param reads a query parameter that is a number or a time: ok is false
// when it is left out, and an empty value is refused rather than taken for
// one left out.
func param(r *http.Request, name string) (v string, ok bool, err error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return "", false, nil
	}
	if v = q.Get(name); v == "" {
		return "", false, badRequest("query parameter %s is empty: give a value or leave it out", name)
	}
	return v, true, nil
}

// boolParam reads a flag: present and empty (?stream), or any of Go's
// spellings of true and false (1, t, TRUE, true, 0, false, …).
func boolParam(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("query parameter %s=%q is not true or false", name, v)
	}
	return b, nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	size, err := intParam(r, "page_size")
	if err != nil {
		return err
	}
	var byUpdate bool
	switch order := r.URL.Query().Get("order"); order {
	case "", "created":
	case "updated":
		byUpdate = true
	default:
		return badRequest("query parameter order=%q is not created (newest created first, the default) or updated (last updated first)", order)
	}
	resp, err := s.svcs.Sessions.List(r.Context(), &session.ListRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"),
		PageSize: size, PageToken: r.URL.Query().Get("page_token"), ByUpdate: byUpdate})
	if err != nil {
		return err
	}
	out := struct {
		Sessions      []sessionJSON `json:"sessions"`
		NextPageToken string        `json:"next_page_token,omitempty"`
	}{Sessions: []sessionJSON{}, NextPageToken: resp.NextPageToken}
	for _, sess := range resp.Sessions {
		out.Sessions = append(out.Sessions, toJSON(sess))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	recent, err := intParam(r, "recent")
	if err != nil {
		return err
	}
	v, ok, err := param(r, "after")
	if err != nil {
		return err
	}
	var after time.Time
	if ok {
		if after, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return badRequest("query parameter after=%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", v)
		}
	}
	beforeSeq, err := intParam(r, "before_seq")
	if err != nil {
		return err
	}
	resp, err := s.svcs.Sessions.Get(r.Context(), &session.GetRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"),
		SessionID: r.PathValue("id"), NumRecentEvents: recent, After: after, BeforeSeq: int64(beforeSeq)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toJSON(resp.Session))
	return nil
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	err := s.svcs.Sessions.Delete(r.Context(), &session.DeleteRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"), SessionID: r.PathValue("id")})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handle loads a session cheaply, to check that it exists.
func (s *Server) handle(r *http.Request) (session.Session, error) {
	resp, err := s.svcs.Sessions.Get(r.Context(), &session.GetRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"),
		SessionID: r.PathValue("id"), NumRecentEvents: 1})
	if err != nil {
		return nil, err
	}
	return resp.Session, nil
}

func (s *Server) appendEvent(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		session.Event
		ExpectedSeq *int64 `json:"expected_seq"`
	}
	if err := decode(r, &req); err != nil {
		var e *apiError
		if errors.As(err, &e) && strings.HasPrefix(e.message, "unknown field ") {
			e.message += `: an event is {"author": "alice", "message": {"role": "user", "parts": [{"type": "text", "text": "Hello"}]}}, with actions, metadata, id and timestamp optional`
		}
		return err
	}
	if req.Seq != 0 || req.Cursor != 0 {
		return badRequest("seq and cursor are assigned by the server: leave them out (use expected_seq for compare-and-swap)")
	}
	if req.Partial {
		return badRequest("partial events are streaming chunks, which are never stored: leave partial out to store the event")
	}
	if req.ExpectedSeq != nil && *req.ExpectedSeq < 0 {
		return badRequest("expected_seq %d is negative: give the sequence number of the session's last event (0 when it has none)", *req.ExpectedSeq)
	}
	if err := principalOf(r.Context()).mayWriteState(req.Actions.StateDelta); err != nil {
		return err
	}
	// Appending needs only the session's key, not a read of it.
	sess := session.Ref(r.PathValue("app"), r.PathValue("user"), r.PathValue("id"))
	var opts []session.AppendOption
	if req.ExpectedSeq != nil {
		opts = append(opts, session.ExpectLastSeq(*req.ExpectedSeq))
	}
	ev := req.Event
	start := time.Now()
	if err := s.svcs.Sessions.AppendEvent(r.Context(), sess, &ev, opts...); errors.Is(err, session.ErrNotFound) {
		return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf(
			"session %q does not exist: create it first (POST …/users/%s/sessions with {\"session_id\": %q}); the Memory Gateway's add creates it for you",
			sess.ID(), sess.UserID(), sess.ID())}
	} else if err != nil {
		return err
	}
	s.metrics.appendLatency.Observe(time.Since(start).Seconds())
	// The event is stored; indexing it now is a courtesy the change feed would make up for.
	if err := s.svcs.Index.Index(r.Context(), sess); err != nil {
		s.logger.Warn("indexing a new event failed; the index will catch up from the change feed", "session", sess.ID(), "error", err)
	}
	writeJSON(w, http.StatusCreated, &ev)
	return nil
}

// sessionContext returns the events an LLM should see next, trimmed by a
// working-memory strategy given inline or by an agent's name.
func (s *Server) sessionContext(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		WorkingMemory *workingmemory.Config `json:"working_memory"`
		Agent         string                `json:"agent"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	var cfg workingmemory.Config
	switch {
	case req.WorkingMemory != nil && req.Agent != "":
		return badRequest("give working_memory or agent, not both")
	case req.WorkingMemory != nil:
		cfg = *req.WorkingMemory
	case req.Agent != "":
		agent, ok := s.cfg.Agents[req.Agent]
		if !ok {
			return badRequest("agent %q is not configured", req.Agent)
		}
		cfg = agent.WorkingMemory
	default:
		return badRequest("give working_memory (such as {\"type\": \"buffer_window\", \"max_messages\": 20}) or agent")
	}
	strategy, err := s.strategy(cfg)
	if err != nil {
		return badRequest("%v", err)
	}
	resp, err := s.svcs.Sessions.Get(r.Context(), &session.GetRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"), SessionID: r.PathValue("id")})
	if err != nil {
		return err
	}
	var events []*session.Event
	for ev := range resp.Session.Events().All() {
		events = append(events, ev)
	}
	kept := strategy.FilterEvents(events)
	if kept == nil {
		kept = []*session.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"strategy": strategy.Name(), "events": kept, "total_events": len(events)})
	return nil
}

// strategy returns a strategy for cfg, made once: token counts are cached in it.
func (s *Server) strategy(cfg workingmemory.Config) (workingmemory.Strategy, error) {
	s.strategyMu.Lock()
	defer s.strategyMu.Unlock()
	if st, ok := s.strategies[cfg]; ok {
		return st, nil
	}
	st, err := workingmemory.New(cfg, workingmemory.WithLogger(s.logger))
	if err != nil {
		return nil, err
	}
	if len(s.strategies) < 1000 { // configurations come from requests: bound what is kept
		s.strategies[cfg] = st
	}
	return st, nil
}

// updateSession changes what a session is named: {"title": "…"}; an empty
// title removes it.
func (s *Server) updateSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Title *string `json:"title"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Title == nil {
		return badRequest(`the body must be {"title": "…"}: the title is the one thing a session's PATCH changes`)
	}
	err := s.svcs.Sessions.SetTitle(r.Context(), &session.SetTitleRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"),
		SessionID: r.PathValue("id"), Title: *req.Title})
	if err != nil {
		return err
	}
	resp, err := s.svcs.Sessions.Get(r.Context(), &session.GetRequest{AppName: r.PathValue("app"), UserID: r.PathValue("user"), SessionID: r.PathValue("id"), NumRecentEvents: 1})
	if err != nil {
		return err
	}
	out := toJSON(resp.Session)
	out.Events = nil
	writeJSON(w, http.StatusOK, out)
	return nil
}
