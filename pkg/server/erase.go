package server

import (
	"net/http"
	"net/url"

	"github.com/hectormem/hector/pkg/userarchive"
)

// eraseUser forgets the path's user in every store and answers the
// receipt: 200 when the erasure is done, else 202 with where to follow it
// (an erasure of many sessions can outlast any client's patience and the
// server's write timeout; it goes on either way).
func (s *Server) eraseUser(w http.ResponseWriter, r *http.Request) error {
	app, user := r.PathValue("app"), r.PathValue("user")
	receipt, done, err := s.svcs.Erasures.Erase(r.Context(), app, user, principalOf(r.Context()).name, s.eraseWait)
	if err != nil {
		return err
	}
	if !done {
		w.Header().Set("Location", "/v1/apps/"+url.PathEscape(app)+"/users/"+url.PathEscape(user)+"/erasure")
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeJSON(w, http.StatusAccepted, receipt)
		return nil
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
	sum, err := userarchive.Restore(r.Context(), r.Body, s.svcs.Archive(), r.PathValue("app"), r.PathValue("user"), principalOf(r.Context()).name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sum)
	return nil
}
