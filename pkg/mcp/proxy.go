package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Remote connects to the MCP endpoint of a running Hector server (its
// base URL) with a credential, and, when the credential acts for several
// users, the app and user to act for.
func Remote(ctx context.Context, baseURL, credential, app, user string) (*sdk.ClientSession, error) {
	set := map[string]string{}
	if credential != "" {
		set["Authorization"] = "Bearer " + credential
	}
	if app != "" {
		set["X-Hector-App"] = app
	}
	if user != "" {
		set["X-Hector-User"] = user
	}
	headers := &withHeaders{set: set, base: http.DefaultTransport}
	transport := &sdk.StreamableClientTransport{Endpoint: baseURL + "/mcp", HTTPClient: &http.Client{Transport: headers}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "hector-mcp", Version: Version}, nil).Connect(ctx, transport, nil)
	if err != nil && headers.unauthorized.Load() {
		return nil, fmt.Errorf("connecting to %s/mcp: %w", baseURL, ErrUnauthorized)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s/mcp: %w", baseURL, err)
	}
	return cs, nil
}

// ErrUnauthorized: the server asked for a credential, or refused the one given.
var ErrUnauthorized = errors.New("the server refused the request for want of a valid credential (401)")

// WithHeaders is an HTTP transport that adds headers to every request.
func WithHeaders(set map[string]string) http.RoundTripper {
	return &withHeaders{set: set, base: http.DefaultTransport}
}

type withHeaders struct {
	set          map[string]string
	base         http.RoundTripper
	unauthorized atomic.Bool // a response was 401
}

func (h *withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		h.unauthorized.Store(true)
	}
	return resp, err
}

// Proxy is a server that offers what remote offers, forwarding each call:
// `hector mcp --server URL` serves a desktop client over stdio this way,
// while the data stays with the server that owns it.
func Proxy(ctx context.Context, remote *sdk.ClientSession) (*sdk.Server, error) {
	init := remote.InitializeResult()
	s := sdk.NewServer(&sdk.Implementation{Name: "hector", Title: "Hector memory", Version: Version}, &sdk.ServerOptions{Instructions: init.Instructions})
	for t, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return remote.CallTool(ctx, &sdk.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return remote.ReadResource(ctx, &sdk.ReadResourceParams{URI: req.Params.URI})
	}
	for r, err := range remote.Resources(ctx, nil) {
		if err != nil {
			return nil, err
		}
		s.AddResource(r, read)
	}
	for t, err := range remote.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, err
		}
		s.AddResourceTemplate(t, read)
	}
	return s, nil
}
