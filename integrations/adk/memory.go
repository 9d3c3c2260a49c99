package hectoradk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/memory"
	adksession "google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	hsession "github.com/hectormem/hector/pkg/session"
)

// memoryService is ADK's memory.Service on Hector's index: what a user
// said in any of their sessions, found by meaning and words.
type memoryService struct{ b backend }

// AddSessionToMemory makes a session's events searchable. A session this
// package's session service read from the same Hector is there already
// (the index follows every append), so it costs nothing. A session kept
// elsewhere (ADK's in-memory service, say) is copied into Hector's
// session of the same app, user and ID, which it creates if need be:
// each event once, by its ID, so adding a session again adds only the
// events it gained. The copies keep what was said, by whom and when;
// their state and artifact deltas are left out, so that another store's
// state changes never change Hector's.
func (m memoryService) AddSessionToMemory(ctx context.Context, s adksession.Session) error {
	if s == nil {
		return errors.New("hectoradk: AddSessionToMemory needs a session")
	}
	if own, ok := s.(*hectorSession); ok && own.from == m.b {
		return nil
	}
	app, user, id := s.AppName(), s.UserID(), s.ID()
	have := map[string]bool{}
	st, err := m.b.getSession(ctx, app, user, id, 0, time.Time{})
	if errors.Is(err, hsession.ErrNotFound) {
		_, err = m.b.createSession(ctx, app, user, id, nil)
		if errors.Is(err, hsession.ErrAlreadyExists) { // another add made it meanwhile
			st, err = m.b.getSession(ctx, app, user, id, 0, time.Time{})
		}
	}
	if err != nil {
		return fmt.Errorf("hectoradk: adding session %q to memory: %w", id, err)
	}
	if st != nil {
		for _, ev := range st.Events {
			have[ev.ID] = true
		}
	}
	if s.Events() == nil {
		return nil
	}
	for ev := range s.Events().All() {
		if ev == nil || ev.Partial {
			continue
		}
		c := *ev
		c.Actions.StateDelta, c.Actions.ArtifactDelta = nil, nil
		if c.ID == "" {
			c.ID = contentID(ev)
		}
		if have[c.ID] {
			continue
		}
		h, err := toHector(&c)
		if err != nil {
			return err
		}
		err = m.b.appendEvent(ctx, app, user, id, h)
		if err != nil && !errors.Is(err, hsession.ErrAlreadyExists) { // another add stored it meanwhile
			return fmt.Errorf("hectoradk: adding event %q of session %q to memory: %w", c.ID, id, err)
		}
		have[c.ID] = true
	}
	return nil
}

// contentID names an event that came without an ID by what it is, so
// that adding it again finds it.
func contentID(ev *adksession.Event) string {
	raw, _ := json.Marshal(ev)
	sum := sha256.Sum256(raw)
	return "adk-" + hex.EncodeToString(sum[:12])
}

// SearchMemory searches what the user said and heard, in every session of
// theirs, never another user's; each entry names its author, time and
// session.
func (m memoryService) SearchMemory(ctx context.Context, req *memory.SearchRequest) (*memory.SearchResponse, error) {
	if req == nil {
		return nil, errors.New("hectoradk: the search request is nil")
	}
	found, err := m.b.search(ctx, req.AppName, req.UserID, req.Query, 0)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: searching memory: %w", err)
	}
	out := &memory.SearchResponse{Memories: make([]memory.Entry, 0, len(found))}
	for _, r := range found {
		role := genai.RoleModel
		if r.Role == hsession.RoleUser || (r.Role == "" && r.Author == "user") {
			role = genai.RoleUser
		}
		out.Memories = append(out.Memories, memory.Entry{
			ID:             r.EventID,
			Content:        genai.NewContentFromText(r.Content, genai.Role(role)),
			Author:         r.Author,
			Timestamp:      r.Timestamp,
			CustomMetadata: map[string]any{"session_id": r.SessionID, "score": r.Score},
		})
	}
	return out, nil
}
