package server

import (
	"context"
	"net/http"

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
	r.Body = http.MaxBytesReader(w, r.Body, int64(s.cfg.Server.Limits.MaxBodyMB)<<20)
	return mcp.Identity{App: app, User: user, Approver: p.approver, By: p.name, MayErase: s.mayEraseOverMCP(p, app, user)}, true
}

// mayEraseOverMCP: erase_user is offered to a credential that may erase
// the user, and never with auth off, where anyone on this machine would
// see a tool that deletes a person in every MCP client's list.
func (s *Server) mayEraseOverMCP(p principal, app, user string) bool {
	return s.auth.enabled() && p.may(s.eraseScope(), app, user)
}
