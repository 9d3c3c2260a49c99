package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/hectormem/hector/pkg/agent"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/gateway"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/tool"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// newRunners makes the configured agents, connecting to their MCP servers;
// it returns what closes those connections.
func newRunners(svcs *config.Services, cfg *config.Config, logger *slog.Logger) (map[string]*agent.Runner, []func() error, error) {
	runners := map[string]*agent.Runner{}
	var closers []func() error
	cache := agent.NewToolCache(nil)
	svcs.Caches = append(svcs.Caches, cache) // erasing a user clears what their calls cached
	for name, a := range cfg.Agents {
		l := cfg.LLMs[a.LLM]
		client, err := llm.New(llm.Config{BaseURL: l.BaseURL, Model: l.Model, APIKey: os.Getenv(l.APIKeyEnv)})
		if err != nil {
			return nil, closers, fmt.Errorf("agents.%s: %w", name, err)
		}
		ac := agent.Config{Name: name, App: a.App, Instruction: a.Instruction, WorkingMemory: a.WorkingMemory,
			Search: a.Search.Enabled, MaxResults: a.Search.MaxResults, MaxSteps: a.MaxSteps, RejectConcurrent: a.ConcurrentRuns == "reject"}
		if a.Summarizer == "llm" {
			ac.Summarizer = workingmemory.NewLLM(client, "")
		}
		if a.Facts.Enabled {
			ac.Facts = &facts.Tools{Facts: svcs.Facts, Scope: a.Facts.Scope, WritePolicy: a.Facts.WritePolicy,
				As: facts.Source{By: "agent", Agent: name}}
			ac.InjectFacts = a.Facts.Inject
			if a.Facts.Extract && svcs.Extractor != nil {
				ac.Learn = svcs.Extractor
			}
			logger.Info("agent facts", "agent", name, "scope", a.Facts.Scope, "write_policy", a.Facts.WritePolicy, "inject", a.Facts.Inject)
			if a.Facts.Scope == facts.ScopeApp && a.Facts.WritePolicy != facts.WriteOff {
				logger.Warn("an agent may write app-scoped facts: one user's turn then changes what every user of the app is told; "+
					"set facts.write_policy: off (or approvers) unless that is intended", "agent", name, "write_policy", a.Facts.WritePolicy)
			}
		}
		if g := a.MemoryGateway; g != nil {
			ac.Remote = &agent.RemoteMemory{Client: &gateway.Client{BaseURL: g.URL, Timeout: time.Duration(g.TimeoutMS) * time.Millisecond},
				UserKey: os.Getenv(g.UserKeyEnv), AppID: g.AppID, ProjectID: g.ProjectID, Scope: g.Scope, TopK: g.TopK}
			logger.Info("agent memory gateway", "agent", name, "url", g.URL)
		}
		for _, m := range a.MCPServers {
			tools, closeFn, err := connectMCP(m, cache)
			if err != nil {
				// An agent without one server's tools still runs; the log says why.
				logger.Warn("an agent's MCP server is not reachable: its tools are left out", "agent", name, "mcp_server", m.Name, "error", err)
				continue
			}
			closers = append(closers, closeFn)
			ac.Tools = append(ac.Tools, tools...)
			logger.Info("agent MCP server", "agent", name, "mcp_server", m.Name, "tools", len(tools), "cache_ttl", cacheTTL(m))
		}
		r, err := agent.New(ac, client, svcs.Sessions, svcs.Index, logger)
		if err != nil {
			return nil, closers, err
		}
		runners[name] = r
	}
	return runners, closers, nil
}

func connectMCP(m config.MCPServer, cache *agent.ToolCache) ([]tool.Tool, func() error, error) {
	headers := map[string]string{}
	for header, env := range m.HeadersEnv {
		headers[header] = os.Getenv(env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, closeFn, err := agent.ConnectMCP(ctx, agent.MCPServer{Name: m.Name, Command: m.Command, URL: m.URL, Headers: headers})
	if err != nil || m.Cache == nil {
		return tools, closeFn, err
	}
	for i, t := range tools {
		if tools[i], err = cache.CacheTool(t, m.Cache.TTLDuration()); err != nil {
			closeFn()
			return nil, nil, err
		}
	}
	return tools, closeFn, nil
}

func cacheTTL(m config.MCPServer) string {
	if m.Cache == nil {
		return "none"
	}
	return m.Cache.TTL
}

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
