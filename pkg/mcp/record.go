package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hectormem/hector/pkg/session"
)

// maxRecorded bounds the messages one record_messages call appends.
const maxRecorded = 100

type recordIn struct {
	SessionID string            `json:"session_id" jsonschema:"the conversation to add to: an ID of your choosing, the same for every turn of one conversation; it is made when new"`
	Messages  []recordedMessage `json:"messages" jsonschema:"the turn's messages, in order (1 to 100)"`
}

type recordedMessage struct {
	Role    string `json:"role" jsonschema:"user or assistant"`
	Content string `json:"content" jsonschema:"the message's text"`
	Author  string `json:"author,omitempty" jsonschema:"who said it, as search results will name them (default: the role)"`
}

type recordOut struct {
	SessionID string `json:"session_id"`
	Created   bool   `json:"created"` // the conversation was new
	Appended  int    `json:"appended"`
	LastSeq   int64  `json:"last_seq"` // the sequence number of the last message appended
}

// recordMessages appends a turn's messages to one of the user's
// conversations, making it when new, all of them or none, and indexes
// them: what an MCP client records, search_memory finds.
func (h *handlers) recordMessages(ctx context.Context, req *sdk.CallToolRequest, in recordIn) (*sdk.CallToolResult, recordOut, error) {
	id, err := h.who(ctx, req.Extra)
	if err != nil {
		return nil, recordOut{}, err
	}
	if in.SessionID == "" {
		return nil, recordOut{}, errors.New("session_id is empty: name the conversation, the same for each of its turns")
	}
	if len(in.Messages) == 0 || len(in.Messages) > maxRecorded {
		return nil, recordOut{}, fmt.Errorf("messages holds %d messages: give 1 to %d", len(in.Messages), maxRecorded)
	}
	var events []*session.Event
	for i, m := range in.Messages {
		if m.Role != session.RoleUser && m.Role != session.RoleAssistant {
			return nil, recordOut{}, fmt.Errorf("messages[%d].role is %q: give user or assistant", i, m.Role)
		}
		if strings.TrimSpace(m.Content) == "" {
			return nil, recordOut{}, fmt.Errorf("messages[%d].content is empty", i)
		}
		author := m.Author
		if author == "" {
			author = m.Role
		}
		events = append(events, &session.Event{Author: author, Message: session.NewTextMessage(m.Role, m.Content)})
	}
	out := recordOut{SessionID: in.SessionID, Appended: len(events)}
	ref := session.Ref(id.App, id.User, in.SessionID)
	err = h.svcs.Sessions.AppendEvents(ctx, ref, events)
	if errors.Is(err, session.ErrNotFound) {
		_, err = h.svcs.Sessions.Create(ctx, &session.CreateRequest{AppName: id.App, UserID: id.User, SessionID: in.SessionID})
		out.Created = err == nil
		if err == nil || errors.Is(err, session.ErrAlreadyExists) { // made meanwhile by another call: as good
			err = h.svcs.Sessions.AppendEvents(ctx, ref, events)
		}
	}
	if err != nil {
		return nil, recordOut{}, err
	}
	out.LastSeq = events[len(events)-1].Seq
	if h.svcs.Index != nil {
		// A courtesy: the change feed would bring them to the index anyway.
		h.svcs.Index.Index(ctx, ref)
	}
	return nil, out, nil
}
