package server

import (
	"net/http"
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
	var req stateBody
	if err := decode(r, &req); err != nil {
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
	var req stateBody
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := s.svcs.Sessions.UpdateUserState(r.Context(), r.PathValue("app"), r.PathValue("user"), req.State); err != nil {
		return err
	}
	return s.getUserState(w, r)
}
