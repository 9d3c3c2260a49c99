package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hectormem/hector/pkg/agent"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/gateway"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/tool"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// Agents makes the configured agents, connecting to their MCP servers, the
// first time it is called (the commands that run no agent never connect);
// later calls return the same agents. Close closes the connections.
func (s *Services) Agents(cfg *config.Config, logger *slog.Logger) (map[string]*agent.Runner, error) {
	s.agentsOnce.Do(func() { s.agents, s.agentsErr = s.makeAgents(cfg, logger) })
	return s.agents, s.agentsErr
}

func (s *Services) makeAgents(cfg *config.Config, logger *slog.Logger) (map[string]*agent.Runner, error) {
	runners := map[string]*agent.Runner{}
	cache := agent.NewToolCache(nil)
	s.Caches = append(s.Caches, cache) // erasing a user clears what their calls cached
	for name, a := range cfg.Agents {
		l := cfg.LLMs[a.LLM]
		client, err := llm.New(llm.Config{BaseURL: l.BaseURL, Model: l.Model, APIKey: os.Getenv(l.APIKeyEnv)})
		if err != nil {
			return nil, fmt.Errorf("agents.%s: %w", name, err)
		}
		ac := agent.Config{Name: name, App: a.App, Instruction: a.Instruction, WorkingMemory: a.WorkingMemory,
			Search: a.Search.Enabled, MaxResults: a.Search.MaxResults, MaxSteps: a.MaxSteps, RejectConcurrent: a.ConcurrentRuns == "reject"}
		if a.Summarizer == "llm" {
			ac.Summarizer = workingmemory.NewLLM(client, "")
		}
		if a.Facts.Enabled {
			ac.Facts = &facts.Tools{Facts: s.Facts, Scope: a.Facts.Scope, WritePolicy: a.Facts.WritePolicy,
				As: facts.Source{By: "agent", Agent: name}}
			ac.InjectFacts = a.Facts.Inject
			if a.Facts.Extract && s.Extractor != nil {
				ac.Learn = s.Extractor
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
			s.mcpConnections = append(s.mcpConnections, closeFn)
			ac.Tools = append(ac.Tools, tools...)
			logger.Info("agent MCP server", "agent", name, "mcp_server", m.Name, "tools", len(tools), "cache_ttl", cacheTTL(m))
		}
		r, err := agent.New(ac, client, s.Sessions, s.Index, logger)
		if err != nil {
			return nil, err
		}
		runners[name] = r
	}
	return runners, nil
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
