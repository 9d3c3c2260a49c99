package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/mcp"
)

// mcpHandler serves MCP at /mcp with the REST API's credentials.
func (s *Server) mcpHandler() http.Handler {
	svcs := mcp.Services{Sessions: s.svcs.Sessions, Index: s.svcs.Index, Facts: s.svcs.Facts, WritePolicy: s.cfg.Server.MCP.WritePolicy,
		Erase: func(ctx context.Context, app, user, by string) (*erase.Receipt, error) {
			// A tool call has no 202: past eraseWait, the receipt says it runs.
			receipt, _, err := s.svcs.Erasures.Erase(ctx, app, user, by, s.eraseWait)
			return receipt, err
		}}
	return mcp.Handler(svcs, s.mcpIdentity, s.logger)
}

// mcpIdentity is who an MCP request acts for: a user credential's own
// user; for an app credential, the user its X-Hector-User header names;
// for an admin (and anyone, with auth off on loopback), the app and user of
// X-Hector-App and X-Hector-User. A header cannot widen a credential.
func (s *Server) mcpIdentity(w http.ResponseWriter, r *http.Request) (mcp.Identity, bool) {
	p, err := s.auth.authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", s.challenge(r, protectedResourceMCPPath))
		writeError(w, toAPIError(s.refused(r, err)))
		return mcp.Identity{}, false
	}
	if err := s.allow(p); err != nil {
		writeError(w, toAPIError(err))
		return mcp.Identity{}, false
	}
	app, user := r.Header.Get("X-Hector-App"), r.Header.Get("X-Hector-User")
	if app == "" && p.role != roleAdmin {
		app = p.app
	}
	if user == "" && p.role == roleUser {
		user = p.user
	}
	if app == "" || user == "" {
		writeError(w, &apiError{http.StatusBadRequest, "identity_required",
			"this credential acts for more than one user: name the user in the X-Hector-User header (and the app in X-Hector-App)"})
		return mcp.Identity{}, false
	}
	if !p.may(scopeUser, app, user) {
		writeError(w, errForbidden)
		return mcp.Identity{}, false
	}
	if err := s.reach(r.Context(), app, user); err != nil {
		writeError(w, toAPIError(err))
		return mcp.Identity{}, false
	}
	if !s.mcpBody(w, r) {
		return mcp.Identity{}, false
	}
	return mcp.Identity{App: app, User: user, Approver: p.approver, By: p.name, MayErase: s.mayEraseOverMCP(p, app, user)}, true
}

// mayEraseOverMCP: erase_user is offered to a credential that may erase
// the user, and never with auth off, where anyone on this machine would
// see a tool that deletes a person in every MCP client's list.
func (s *Server) mayEraseOverMCP(p principal, app, user string) bool {
	return s.auth.enabled() && p.may(s.eraseScope(), app, user)
}

// mcpBody reads a request's body within the limit and refuses, as a
// JSON-RPC error, one over it or one that is not valid JSON: the MCP
// library's decoder would take a lone surrogate or an overlong UTF-8 form
// as U+FFFD, and store an ID the REST API refuses.
func (s *Server) mcpBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		return true
	}
	limit := int64(s.cfg.Server.Limits.MaxBodyMB) << 20
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body over the limit of %d bytes", limit))
		return false
	case err != nil:
		writeRPCError(w, http.StatusBadRequest, -32700, "reading the request body: "+err.Error())
		return false
	case !jsontext.Value(raw).IsValid():
		writeRPCError(w, http.StatusBadRequest, -32700, "the body is not valid JSON in valid UTF-8 (a lone surrogate, an overlong form, or a syntax error)")
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	return true
}

// writeRPCError answers a JSON-RPC error that no request ID can be read
// for.
func writeRPCError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": message}})
}
