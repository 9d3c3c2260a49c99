package session

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/state"
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

func validateOwner(app, user string) error {
	if err := ident.Check("app name", app); err != nil {
		return err
	}
	return ident.Check("user ID", user)
}

func validateSessionKey(app, user, id string) error {
	if err := validateOwner(app, user); err != nil {
		return err
	}
	return ident.Check("session ID", id)
}

// splitDelta validates a state delta; errors wrap both ErrInvalidArgument
// and the state package's error.
func splitDelta(delta map[string]any, maxValueBytes int) (state.Delta, error) {
	d, err := state.Split(delta, maxValueBytes)
	if err != nil {
		return state.Delta{}, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return d, nil
}

// splitScopedDelta validates a delta whose keys must all belong to one scope,
// as the session-less state updates require.
func splitScopedDelta(delta map[string]any, scope state.Scope, maxValueBytes int) (map[string]any, error) {
	d, err := splitDelta(delta, maxValueBytes)
	if err != nil {
		return nil, err
	}
	want, prefix := d.App, state.KeyPrefixApp
	if scope == state.ScopeUser {
		want, prefix = d.User, state.KeyPrefixUser
	}
	if len(want) != len(delta) {
		for k := range delta {
			if _, ok := want[k]; !ok {
				return nil, invalid("state key %q is not a %s key: every key here must start with %q", k, scope, prefix)
			}
		}
	}
	return want, nil
}

// roleAliases are the roles agent frameworks write for Hector's own:
// Gemini and ADK say model, OpenAI developer (for system) and function.
var roleAliases = map[string]string{"model": RoleAssistant, "developer": RoleSystem, "function": RoleTool}

// normalizeMessage returns m with its role in Hector's words (a copy when
// it was another framework's), or an error naming what is wrong with it.
func normalizeMessage(m *Message) (*Message, error) {
	if m == nil {
		return nil, nil
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool:
	default:
		role, ok := roleAliases[m.Role]
		if !ok {
			return nil, invalid("message role %q is not one of user, assistant, system or tool (model, developer and function are taken as assistant, system and tool; roles are lowercase)", m.Role)
		}
		c := *m
		c.Role = role
		m = &c
	}
	return m, validateParts(m)
}

func validateParts(m *Message) error {
	for i, p := range m.Parts {
		var ok bool
		switch p.Type {
		case PartText:
			ok = true
		case PartData:
			ok = p.Data != nil
		case PartFile:
			ok = p.File != nil
		case PartToolCall:
			ok = p.ToolCall != nil && p.ToolCall.ID != "" && p.ToolCall.Name != ""
		case PartToolResult:
			ok = p.ToolResult != nil && p.ToolResult.CallID != ""
		default:
			return invalid("message part %d has unknown type %q (want text, data, file, tool_call or tool_result)", i, p.Type)
		}
		if !ok {
			return invalid("message part %d of type %q is missing its %s", i, p.Type, partRequirement[p.Type])
		}
	}
	return nil
}

var partRequirement = map[PartType]string{
	PartData:       `"data" object`,
	PartFile:       `"file" object`,
	PartToolCall:   `"tool_call" with an id and a name`,
	PartToolResult: `"tool_result" with a call_id`,
}

// The request checks both backends share: each returns what the request
// names, or an error wrapping ErrInvalidArgument.

func (l limits) checkCreate(req *CreateRequest) (sessionKey, state.Delta, error) {
	if req == nil {
		return sessionKey{}, state.Delta{}, invalid("create request is nil")
	}
	id := req.SessionID
	if id == "" {
		id = newSessionID()
	}
	if err := validateSessionKey(req.AppName, req.UserID, id); err != nil {
		return sessionKey{}, state.Delta{}, err
	}
	if err := checkTitle(req.Title); err != nil {
		return sessionKey{}, state.Delta{}, err
	}
	d, err := splitDelta(req.State, l.maxValueBytes)
	return sessionKey{owner{req.AppName, req.UserID}, id}, d, err
}

// checkTitle refuses a title that is too long or holds control characters.
func checkTitle(title string) error {
	switch {
	case !utf8.ValidString(title):
		return invalid("the title is not valid UTF-8")
	case utf8.RuneCountInString(title) > MaxTitleChars:
		return invalid("the title has %d characters, over the limit of %d", utf8.RuneCountInString(title), MaxTitleChars)
	case strings.ContainsFunc(title, unicode.IsControl):
		return invalid("the title holds a control character")
	}
	return nil
}

func checkSetTitle(req *SetTitleRequest) (sessionKey, error) {
	if req == nil {
		return sessionKey{}, invalid("set-title request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return sessionKey{}, err
	}
	return sessionKey{owner{req.AppName, req.UserID}, req.SessionID}, checkTitle(req.Title)
}

func checkGet(req *GetRequest) (sessionKey, error) {
	if req == nil {
		return sessionKey{}, invalid("get request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return sessionKey{}, err
	}
	if req.NumRecentEvents < 0 {
		return sessionKey{}, invalid("NumRecentEvents %d is negative", req.NumRecentEvents)
	}
	if req.BeforeSeq < 0 {
		return sessionKey{}, invalid("BeforeSeq %d is negative", req.BeforeSeq)
	}
	return sessionKey{owner{req.AppName, req.UserID}, req.SessionID}, nil
}

func checkList(req *ListRequest) (o owner, size int, from *listPosition, err error) {
	if req == nil {
		return o, 0, nil, invalid("list request is nil")
	}
	if err := validateOwner(req.AppName, req.UserID); err != nil {
		return o, 0, nil, err
	}
	if size, err = pageSize(req.PageSize); err != nil {
		return o, 0, nil, err
	}
	if from, err = parsePageToken(req.PageToken); err == nil && from != nil && from.ByUpdate != req.ByUpdate {
		err = invalid("the page token continues a listing in another order: ask with the same ByUpdate, or start again")
	}
	return owner{req.AppName, req.UserID}, size, from, err
}

func checkDelete(req *DeleteRequest) (sessionKey, error) {
	if req == nil {
		return sessionKey{}, invalid("delete request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return sessionKey{}, err
	}
	return sessionKey{owner{req.AppName, req.UserID}, req.SessionID}, nil
}
