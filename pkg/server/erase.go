package server

import (
	"net/http"

	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/index"
)

// eraseUser forgets the path's user in every store and keeps the receipt.
func (s *Server) eraseUser(w http.ResponseWriter, r *http.Request) error {
	app, user := r.PathValue("app"), r.PathValue("user")
	svcs := erase.Services{Sessions: s.svcs.Sessions, Artifacts: s.svcs.Artifacts, Facts: s.svcs.Facts}
	if idx, ok := s.svcs.Index.(*index.Index); ok {
		svcs.Index = idx
	}
	if s.svcs.Extractor != nil {
		s.svcs.Extractor.Forget(app, user)
	}
	receipt, err := erase.User(r.Context(), svcs, app, user, principalOf(r.Context()).name)
	if err != nil {
		return err
	}
	if err := s.svcs.Receipts.Put(r.Context(), receipt); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, receipt)
	return nil
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
