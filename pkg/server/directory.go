package server

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
)

// whoami says who the credential is, and what it may reach.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	p := principalOf(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"name": p.name, "role": p.role, "app": p.app, "user": p.user, "approver": p.approver})
	return nil
}

// listUsers lists who holds memory: sessions, facts, or both. Every app's
// users (/v1/users, admin), or one app's (/v1/apps/{app}/users). Both
// stores list their owners by app then user as Go compares strings, so a
// page is the two lists merged, and the page token the last owner listed.
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	lister, ok := s.svcs.Sessions.(session.OwnerLister)
	if !ok {
		return &apiError{http.StatusNotImplemented, "not_implemented", "this session backend cannot list its users"}
	}
	size, err := intParam(r, "page_size")
	if err != nil {
		return err
	}
	token, app := r.URL.Query().Get("page_token"), r.PathValue("app")
	afterApp, afterUser, err := session.OwnersTokenPosition(token)
	if err != nil {
		return err
	}
	withSessions, err := lister.ListOwners(r.Context(), &session.OwnersRequest{AppName: app, PageSize: size, PageToken: token})
	if err != nil {
		return err
	}
	if size == 0 {
		size = session.DefaultPageSize
	}
	withFacts, err := s.svcs.Facts.Owners(r.Context(), app, facts.Owner{App: afterApp, User: afterUser}, size+1)
	if err != nil {
		return err
	}
	type user struct {
		App        string     `json:"app"`
		User       string     `json:"user"`
		Sessions   int        `json:"sessions"`
		Facts      int        `json:"facts"`
		LastUpdate *time.Time `json:"last_update_time,omitempty"`
	}
	users := []user{}
	more := withSessions.NextPageToken != "" || len(withFacts) > size
	for i, j := 0, 0; i < len(withSessions.Owners) || j < len(withFacts); {
		var u user
		c := 1 // which list the next owner comes from: -1 sessions, 1 facts, 0 both
		if i < len(withSessions.Owners) && j < len(withFacts) {
			o := withSessions.Owners[i]
			c = cmp.Or(strings.Compare(o.AppName, withFacts[j].App), strings.Compare(o.UserID, withFacts[j].User))
		} else if i < len(withSessions.Owners) {
			c = -1
		}
		if c <= 0 {
			o := withSessions.Owners[i]
			u = user{App: o.AppName, User: o.UserID, Sessions: o.Sessions, LastUpdate: &o.LastUpdate}
			i++
		}
		if c >= 0 {
			f := withFacts[j]
			u.App, u.User, u.Facts = f.App, f.User, f.Facts
			j++
		}
		if len(users) == size {
			more = true
			break
		}
		users = append(users, u)
	}
	out := struct {
		Users         []user `json:"users"`
		NextPageToken string `json:"next_page_token,omitempty"`
	}{Users: users}
	if more && len(users) > 0 {
		last := users[len(users)-1]
		out.NextPageToken = session.OwnersPageToken(last.App, last.User)
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
	if err := indexHealing(r.Context(), s.svcs); err != nil {
		out["healing"] = err.Error()
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
