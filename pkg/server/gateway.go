package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/gateway"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// The Memory Gateway protocol (pkg/gateway) over Hector: app_id and
// project_id name the app ("support", or "support:beta" for a project other
// than default), user_id the user, and user_key must be a credential that
// reaches that user.

// gatewayApp maps app_id and project_id to a Hector app.
func gatewayApp(id gateway.Identity) string {
	app, project := id.AppID, id.ProjectID
	if app == "" {
		app = "default"
	}
	if project == "" || project == "default" {
		return app
	}
	return app + ":" + project
}

// gatewayAdmit checks a gateway request's identity: 401 for a missing or
// wrong key, 403 for a key that does not reach this user.
func (s *Server) gatewayAdmit(r *http.Request, id gateway.Identity) (string, error) {
	if id.UserID == "" {
		return "", badRequest("field \"user_id\" is empty")
	}
	p, err := s.auth.authenticateToken(id.UserKey)
	if err != nil {
		return "", s.refused(r, &apiError{http.StatusUnauthorized, "unauthenticated", "user_key is missing or not a valid credential"})
	}
	app := gatewayApp(id)
	if !p.may(scopeUser, app, id.UserID) {
		return "", errForbidden
	}
	if err := s.allow(p); err != nil {
		return "", err
	}
	return app, s.reach(r.Context(), app, id.UserID)
}

// chatSession checks a session ID of the form chat:<id>.
func chatSession(field, id string) (string, error) {
	if rest, ok := strings.CutPrefix(id, "chat:"); !ok || strings.TrimSpace(rest) == "" {
		return "", badRequest("field %q: %q is not of the form chat:<id>", field, id)
	}
	return id, nil
}

// decodeChat reads a request about one chat (add, flush) and admits it.
func (s *Server) decodeChat(r *http.Request, req any, id *gateway.Identity, sessionID *string) (app, sid string, err error) {
	if err := decode(r, req); err != nil {
		return "", "", err
	}
	if app, err = s.gatewayAdmit(r, *id); err != nil {
		return "", "", err
	}
	sid, err = chatSession("session_id", *sessionID)
	return app, sid, err
}

func (s *Server) gatewayAdd(w http.ResponseWriter, r *http.Request) error {
	var req gateway.AddRequest
	app, sid, err := s.decodeChat(r, &req, &req.Identity, &req.SessionID)
	if err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return badRequest("field \"messages\" is empty")
	}
	var events []*session.Event
	var last int64
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Timestamp <= 0:
			return badRequest("field %q: timestamp must be positive Unix epoch milliseconds", field+".timestamp")
		case m.Timestamp < last:
			return badRequest("field %q: timestamps must not decrease", field+".timestamp")
		case !slices.Contains([]string{session.RoleUser, session.RoleAssistant, session.RoleSystem}, m.Role):
			return badRequest("field %q: role %q is not user, assistant or system", field+".role", m.Role)
		case strings.TrimSpace(m.Content) == "":
			return badRequest("field %q is empty", field+".content")
		}
		last = m.Timestamp
		author := m.SenderID
		if author == "" {
			author = m.Role
		}
		events = append(events, &session.Event{Author: author, Timestamp: time.UnixMilli(m.Timestamp),
			Message: session.NewTextMessage(m.Role, m.Content)})
	}
	// All of the messages or none: a refused add stores nothing, so its
	// corrected retry stores each message once. Every event is checked
	// before the session is looked for, so a refused first add of a chat
	// does not leave an empty session behind either.
	ref := session.Ref(app, req.UserID, sid)
	err = s.svcs.Sessions.AppendEvents(r.Context(), ref, events)
	if errors.Is(err, session.ErrNotFound) {
		_, err = s.svcs.Sessions.Create(r.Context(), &session.CreateRequest{AppName: app, UserID: req.UserID, SessionID: sid})
		if err == nil || errors.Is(err, session.ErrAlreadyExists) { // made meanwhile by another add: as good
			err = s.svcs.Sessions.AppendEvents(r.Context(), ref, events)
		}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"added": len(events)})
	return nil
}

// gatewayFlush indexes what was added; flushing again changes nothing.
func (s *Server) gatewayFlush(w http.ResponseWriter, r *http.Request) error {
	var req gateway.FlushRequest
	app, sid, err := s.decodeChat(r, &req, &req.Identity, &req.SessionID)
	if err != nil {
		return err
	}
	resp, err := s.svcs.Sessions.Get(r.Context(), &session.GetRequest{AppName: app, UserID: req.UserID, SessionID: sid, NumRecentEvents: 1})
	if err != nil {
		return err
	}
	if err := s.svcs.Index.Index(r.Context(), resp.Session); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"flushed": true})
	return nil
}

func (s *Server) gatewaySearch(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		gateway.SearchRequest
		TopK *int `json:"top_k"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	app, err := s.gatewayAdmit(r, req.Identity)
	if err != nil {
		return err
	}
	topK := 8
	if req.TopK != nil {
		topK = *req.TopK
	}
	switch {
	case topK < 1 || topK > 100:
		return badRequest("field \"top_k\": %d is outside 1..100", topK)
	case strings.TrimSpace(req.Query) == "":
		return badRequest("field \"query\" is empty")
	case len(req.Scope) == 0:
		return badRequest("field \"scope\" is empty: give current_chat, resources and/or all_user_memory")
	}
	// A runtime searches with the turn it is about to answer, of any length:
	// its first words are searched rather than the turn refused.
	query := index.CutQuery(req.Query)
	var chat string
	for _, sc := range req.Scope {
		switch sc {
		case gateway.ScopeCurrentChat:
			id := req.ConversationID
			if id != "" && !strings.HasPrefix(id, "chat:") {
				id = "chat:" + id
			}
			if chat, err = chatSession("conversation_id", id); err != nil {
				return badRequest("field \"conversation_id\": current_chat needs the conversation, as chat:<id>")
			}
		case gateway.ScopeResources, gateway.ScopeAllUserMemory:
		default:
			return badRequest("field \"scope\": %q is not current_chat, resources or all_user_memory", sc)
		}
	}
	var memory, resources []gateway.Result
	if chat != "" || slices.Contains(req.Scope, gateway.ScopeAllUserMemory) {
		limit := topK
		if chat != "" {
			limit = min(index.MaxLimit, topK*20) // the index ranks the user's memory; the chat's part is filtered out of it
		}
		resp, err := s.svcs.Index.Search(r.Context(), &index.SearchRequest{Query: query, AppName: app, UserID: req.UserID, Limit: limit})
		if err != nil {
			return err
		}
		for _, hit := range resp.Results {
			source := gateway.ScopeAllUserMemory
			if hit.SessionID == chat {
				source = gateway.ScopeCurrentChat
			} else if !slices.Contains(req.Scope, gateway.ScopeAllUserMemory) {
				continue
			}
			memory = append(memory, gateway.Result{ID: hit.EventID, SessionID: hit.SessionID, Text: hit.Content, Score: hit.Score, SourceScope: source})
		}
	}
	if slices.Contains(req.Scope, gateway.ScopeResources) {
		if resources, err = s.searchFacts(r.Context(), facts.UserScope(app, req.UserID), query); err != nil {
			return err
		}
	}
	results := interleave(memory, resources)
	writeJSON(w, http.StatusOK, gateway.SearchResponse{Results: results[:min(topK, len(results))]})
	return nil
}

// interleave merges two ranked lists by rank, not by score: a BM25 score
// and a share of matched words are not on one scale. Each result keeps its
// own score; the first list wins ties.
func interleave(a, b []gateway.Result) []gateway.Result {
	out := make([]gateway.Result, 0, len(a)+len(b))
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

// searchFacts ranks the user's curated facts by the share of the query's
// words they contain.
func (s *Server) searchFacts(ctx context.Context, scope facts.Scope, query string) ([]gateway.Result, error) {
	fs, err := s.svcs.Facts.List(ctx, scope, "", "")
	if err != nil {
		return nil, err
	}
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var out []gateway.Result
	for _, f := range fs {
		text := strings.ToLower(f.Key + " " + f.Value)
		hits := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				hits++
			}
		}
		if hits > 0 {
			out = append(out, gateway.Result{ID: "fact:" + f.Key, Text: f.Key + ": " + f.Value, Score: float64(hits) / float64(len(words)),
				SourceScope: gateway.ScopeResources, ResourceURI: "hector://facts/" + f.Key})
		}
	}
	slices.SortStableFunc(out, func(a, b gateway.Result) int { return cmp.Compare(b.Score, a.Score) }) // newest first among equals
	return out, nil
}
