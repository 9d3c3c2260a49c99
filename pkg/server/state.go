package server

import (
	"errors"
	"net/http"
	"strings"
)

type stateBody struct {
	State map[string]any `json:"state"`
}

func (s *Server) getAppState(w http.ResponseWriter, r *http.Request) error {
	st, err := s.svcs.Sessions.AppState(r.Context(), r.PathValue("app"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, stateBody{st})
	return nil
}

func (s *Server) patchAppState(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeState(r)
	if err != nil {
		return err
	}
	if err := s.svcs.Sessions.UpdateAppState(r.Context(), r.PathValue("app"), req.State); err != nil {
		return err
	}
	return s.getAppState(w, r)
}

func (s *Server) getUserState(w http.ResponseWriter, r *http.Request) error {
	st, err := s.svcs.Sessions.UserState(r.Context(), r.PathValue("app"), r.PathValue("user"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, stateBody{st})
	return nil
}

func (s *Server) patchUserState(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeState(r)
	if err != nil {
		return err
	}
	if err := s.svcs.Sessions.UpdateUserState(r.Context(), r.PathValue("app"), r.PathValue("user"), req.State); err != nil {
		return err
	}
	return s.getUserState(w, r)
}

// decodeState reads a PATCH of state, saying what to do when the keys
// came without their {"state": …} wrapper, as they come back from a GET.
func decodeState(r *http.Request) (stateBody, error) {
	var req stateBody
	err := decode(r, &req)
	var unknown *apiError
	if errors.As(err, &unknown) && strings.HasPrefix(unknown.message, "unknown field ") {
		key := strings.TrimPrefix(unknown.message, "unknown field ")
		return req, badRequest(`the body must be {"state": {…}}: put the keys (such as %s) inside "state"; a null value deletes a key`, key)
	}
	if err == nil && req.State == nil {
		return req, badRequest(`the body must be {"state": {…}}: "state" is missing`)
	}
	return req, err
}
