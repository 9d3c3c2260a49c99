package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/hectormem/hector/pkg/agent"
)

// runAgent runs one turn: JSON back when it is done, or server-sent events
// as it happens (?stream=true): text, tool_call, tool_result, then done or error.
func (s *Server) runAgent(w http.ResponseWriter, r *http.Request) error {
	runner, ok := s.agents[r.PathValue("agent")]
	if !ok {
		return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("no agent named %q is configured", r.PathValue("agent"))}
	}
	var req struct {
		UserID    string `json:"user_id"`
		SessionID string `json:"session_id"`
		Message   string `json:"message"`
		App       string `json:"app"`
	}
	stream, err := boolParam(r, "stream")
	if err != nil {
		return err
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.App != "" && req.App != runner.App() {
		return badRequest("field \"app\": agent %q serves app %q", r.PathValue("agent"), runner.App())
	}
	if req.UserID == "" {
		return badRequest("field \"user_id\" is empty")
	}
	if !principalOf(r.Context()).may(scopeUser, runner.App(), req.UserID) {
		return errForbidden
	}
	if err := s.reach(r.Context(), runner.App(), req.UserID); err != nil {
		return err
	}
	run := agent.Request{UserID: req.UserID, SessionID: req.SessionID, Message: req.Message, Approver: principalOf(r.Context()).approver}
	if !stream {
		res, err := runner.Run(r.Context(), run, nil)
		if err != nil {
			return runError(err)
		}
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data any) {
		raw, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, raw)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	res, err := runner.Run(r.Context(), run, func(kind string, data any) {
		if kind == "text" {
			data = map[string]any{"text": data}
		}
		send(kind, data)
	})
	if err != nil {
		e := toAPIError(runError(err))
		send("error", map[string]any{"error": map[string]string{"code": e.code, "message": e.message}})
		return nil
	}
	send("done", res)
	return nil
}

func runError(err error) error {
	switch {
	case errors.Is(err, agent.ErrBusy):
		return &apiError{http.StatusConflict, "busy", err.Error()}
	case errors.Is(err, agent.ErrModel):
		return &apiError{http.StatusBadGateway, "model_error", err.Error() + " (your message is saved)"}
	}
	return err
}

// agentInfo is a configured agent as GET /v1/agents describes it.
type agentInfo struct {
	Name          string   `json:"name"`
	App           string   `json:"app"`
	LLM           string   `json:"llm"`
	Model         string   `json:"model"`
	WorkingMemory string   `json:"working_memory"`
	Tools         []string `json:"tools"`       // what its model may call: Hector's and its MCP servers'
	MCPServers    []string `json:"mcp_servers"` // whose tools it may call
	Run           string   `json:"run"`         // where to run a turn
}

// listAgents lists the configured agents the caller may run: every one for
// the admin, its app's for an app's or a user's credential.
func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r.Context())
	out := []agentInfo{}
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Agents)) {
		a := s.cfg.Agents[name]
		app := cmp.Or(a.App, name)
		if p.role != roleAdmin && p.app != "" && p.app != app {
			continue
		}
		info := agentInfo{Name: name, App: app, LLM: a.LLM, Model: s.cfg.LLMs[a.LLM].Model, WorkingMemory: cmp.Or(a.WorkingMemory.Type, "all"),
			Tools: []string{}, MCPServers: []string{}, Run: "/v1/agents/" + url.PathEscape(name) + "/run"}
		if runner := s.agents[name]; runner != nil {
			info.Tools = runner.Tools()
		}
		for _, m := range a.MCPServers {
			info.MCPServers = append(info.MCPServers, m.Name)
		}
		out = append(out, info)
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
	return nil
}
