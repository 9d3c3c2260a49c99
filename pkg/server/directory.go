package server

import (
	"net/http"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// whoami says who the credential is, and what it may reach.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"name": p.name, "role": p.role, "app": p.app, "user": p.user, "approver": p.approver})
	return nil
}

// listUsers lists who has sessions: every app's users (/v1/users, admin),
// or one app's (/v1/apps/{app}/users).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	lister, ok := s.svcs.Sessions.(session.OwnerLister)
	if !ok {
		return &apiError{http.StatusNotImplemented, "not_implemented", "this session backend cannot list its users"}
	}
	size, err := intParam(r, "page_size")
	if err != nil {
		return err
	}
	resp, err := lister.ListOwners(r.Context(), &session.OwnersRequest{AppName: r.PathValue("app"), PageSize: size, PageToken: r.URL.Query().Get("page_token")})
	if err != nil {
		return err
	}
	type user struct {
		App        string    `json:"app"`
		User       string    `json:"user"`
		Sessions   int       `json:"sessions"`
		LastUpdate time.Time `json:"last_update_time"`
	}
	out := struct {
		Users         []user `json:"users"`
		NextPageToken string `json:"next_page_token,omitempty"`
	}{Users: []user{}, NextPageToken: resp.NextPageToken}
	for _, o := range resp.Owners {
		out.Users = append(out.Users, user{o.AppName, o.UserID, o.Sessions, o.LastUpdate})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// indexStatus describes the search index: its type, where it lives, how
// far behind the change feed it is (its vectors too, when they are
// embedded in the background), and the latest rebuild.
func (s *Server) indexStatus(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{"type": s.cfg.Server.Index.Type, "store": s.indexLocation()}
	if lag, err := indexLag(r.Context(), s.svcs); err == nil {
		out["lag"] = lag.terms
		if lag.background {
			out["vector_lag"] = lag.vectors
		}
	}
	if err := s.svcs.Index.Ready(r.Context()); err != nil {
		out["error"] = err.Error()
	}
	out["skipped"] = s.svcs.Index.Skipped()
	s.rebuild.mu.Lock()
	rebuild := s.rebuild.status
	s.rebuild.mu.Unlock()
	if rebuild.State == "" {
		rebuild.State = "idle"
	}
	out["rebuild"] = rebuild
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) indexLocation() string {
	for _, l := range s.cfg.Locations() {
		if l.What == "index" {
			return l.Where
		}
	}
	return ""
}
