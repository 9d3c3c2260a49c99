package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hectormem/hector/pkg/mcp"
	"github.com/hectormem/hector/pkg/tool"
)

// MCPServer is an MCP server whose tools an agent may call: a command run
// over stdio, or a Streamable HTTP URL with headers.
type MCPServer struct {
	Name    string
	Command []string
	URL     string
	Headers map[string]string
}

// ConnectMCP connects to s and returns its tools, and what closes the
// connection (and stops the command).
func ConnectMCP(ctx context.Context, s MCPServer) ([]tool.Tool, func() error, error) {
	var transport sdk.Transport
	switch {
	case len(s.Command) > 0:
		transport = &sdk.CommandTransport{Command: exec.Command(s.Command[0], s.Command[1:]...)}
	case s.URL != "":
		transport = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: mcp.WithHeaders(s.Headers)}}
	default:
		return nil, nil, fmt.Errorf("MCP server %s: give a command or a url", s.Name)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "hector", Version: mcp.Version}, nil).Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %s: connecting: %w", s.Name, err)
	}
	var tools []tool.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, nil, fmt.Errorf("MCP server %s: listing its tools: %w", s.Name, err)
		}
		schema, _ := t.InputSchema.(map[string]any)
		tools = append(tools, &mcpTool{server: s.Name, name: t.Name, description: t.Description, schema: schema, cs: cs})
	}
	return tools, cs.Close, nil
}

// mcpTool is one tool of an MCP server.
type mcpTool struct {
	server, name, description string
	schema                    map[string]any
	cs                        *sdk.ClientSession
}

func (t *mcpTool) Name() string               { return t.name }
func (t *mcpTool) Description() string        { return t.description }
func (t *mcpTool) Parameters() map[string]any { return t.schema }

// Call runs the tool on its server. The server never learns who the user
// is: the invocation's identity stays in Hector.
func (t *mcpTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	res, err := t.cs.CallTool(ctx, &sdk.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", t.server, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if res.IsError {
		return nil, errors.New(strings.Join(texts, "\n"))
	}
	if res.StructuredContent != nil {
		return res.StructuredContent, nil
	}
	return strings.Join(texts, "\n"), nil
}
