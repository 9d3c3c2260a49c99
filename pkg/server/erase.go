package server

import (
	"context"
	"net/http"

	"github.com/hectormem/hector/pkg/userarchive"
)

// eraseUser forgets the path's user in every store and keeps the receipt
// (see config.Services.Erase).
func (s *Server) eraseUser(w http.ResponseWriter, r *http.Request) error {
	// A client that goes away does not stop an erasure half-way.
	receipt, err := s.svcs.Erase(context.WithoutCancel(r.Context()), r.PathValue("app"), r.PathValue("user"), principalOf(r.Context()).name, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, receipt)
	return nil
}

// eraseScope is who may erase a user: an app's credential or the admin's,
// and the user's own with server.auth.self_erasure.
func (s *Server) eraseScope() scope {
	if s.cfg.Server.Auth.SelfErasure {
		return scopeUser
	}
	return scopeApp
}

func (s *Server) erasureReceipt(w http.ResponseWriter, r *http.Request) error {
	receipt, err := s.svcs.Receipts.Latest(r.Context(), r.PathValue("app"), r.PathValue("user"))
	if err != nil {
		return err
	}
	if receipt == nil {
		return &apiError{http.StatusNotFound, "not_found", "this user was never erased"}
	}
	writeJSON(w, http.StatusOK, receipt)
	return nil
}

// exportUser streams the user's archive. Once it has begun, an error can
// only cut it short: the connection is dropped, so that a client never
// takes a truncated archive for a whole one.
func (s *Server) exportUser(w http.ResponseWriter, r *http.Request) error {
	app, user := r.PathValue("app"), r.PathValue("user")
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", `attachment; filename="hector-export.tar"`)
	if err := userarchive.Write(r.Context(), w, s.svcs.Archive(), app, user); err != nil {
		s.logger.Error("export failed part-way; the connection is dropped", "app", app, "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// importUser restores the path's user from the archive in the body.
func (s *Server) importUser(w http.ResponseWriter, r *http.Request) error {
	sum, err := userarchive.Restore(r.Context(), r.Body, s.svcs.Archive(), r.PathValue("app"), r.PathValue("user"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sum)
	return nil
}
