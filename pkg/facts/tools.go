package facts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hectormem/hector/internal/timearg"
	"github.com/hectormem/hector/pkg/tool"
)

// Write policies for agents' fact tools.
const (
	WriteAuto      = "auto"      // the agent may store and forget
	WriteApprovers = "approvers" // only in turns started by an approver credential
	WriteOff       = "off"       // read only
)

// Tools are the memory_store, memory_recall, memory_history and
// memory_forget tools over one scope kind; the scope's IDs come from the
// invocation, never from the model's arguments.
type Tools struct {
	Facts       *Service
	Scope       string // app, user or session
	WritePolicy string
	// As is the source of what the tools write (By, Agent); the
	// invocation's session is added.
	As Source
}

// List returns the tools an agent gets: all four, or only the two that
// read when its write policy is off.
func (t Tools) List() []tool.Tool {
	tools := []tool.Tool{&recallTool{t}, &historyTool{t}}
	if t.WritePolicy != WriteOff {
		tools = append(tools, &storeTool{t}, &forgetTool{t})
	}
	return tools
}

// ScopeOf is the facts scope an invocation reaches.
func (t Tools) ScopeOf(inv tool.Invocation) Scope {
	switch t.Scope {
	case ScopeApp:
		return AppScope(inv.AppName)
	case ScopeSession:
		return SessionScope(inv.AppName, inv.UserID, inv.SessionID)
	}
	return UserScope(inv.AppName, inv.UserID)
}

func (t Tools) mayWrite(inv tool.Invocation) error {
	switch {
	case t.WritePolicy == WriteOff:
		return errors.New("this agent may not change facts")
	case t.WritePolicy == WriteApprovers && !inv.Approver:
		return errors.New("only a turn started by an approver may change facts: ask the user to have an approver save it")
	}
	return nil
}

func decodeArgs(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

// explain turns a refusal into a result the model can act on.
func explain(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return fmt.Errorf("refused (%s): %s", ve.Code, ve.Message)
	}
	return err
}

type storeTool struct{ Tools }

func (*storeTool) Name() string { return "memory_store" }
func (*storeTool) Description() string {
	return "Remember a durable fact the user asked you to keep (a preference, convention or decision). " +
		"The same key again supersedes its value; the old one stays in the key's history."
}
func (*storeTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"key", "value"},
		"properties": map[string]any{
			"key":         map[string]any{"type": "string", "description": "A short name; / forms a hierarchy, as in deploy/tool"},
			"value":       map[string]any{"type": "string"},
			"category":    map[string]any{"type": "string", "description": "Default user_facts"},
			"tags":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"ttl_seconds": map[string]any{"type": "integer", "description": "How long to keep it; default 90 days"},
			"merge_duplicates": map[string]any{"type": "boolean",
				"description": "When another key already holds this fact in other words: true renews that one, false (the default) refuses, naming the key"},
		}}
}

func (t *storeTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	if err := t.mayWrite(inv); err != nil {
		return nil, err
	}
	var in struct {
		Key        string   `json:"key"`
		Value      string   `json:"value"`
		Category   string   `json:"category"`
		Tags       []string `json:"tags"`
		TTLSeconds int64    `json:"ttl_seconds"`
		Merge      bool     `json:"merge_duplicates"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	ttl, err := TTLSeconds(in.TTLSeconds)
	if err != nil {
		return nil, explain(err)
	}
	src := t.As
	src.Kind, src.SessionID = SourceWritten, inv.SessionID
	f, err := t.Facts.Store(ctx, t.ScopeOf(inv), StoreRequest{Key: in.Key, Value: in.Value, Category: in.Category, Tags: in.Tags, TTL: ttl, Source: src,
		MergeDuplicates: in.Merge})
	if err != nil {
		return nil, explain(err)
	}
	return &storedOut{Stored: f}, nil
}

type storedOut struct {
	Stored *Fact `json:"stored"`
}

func (*storeTool) Hints() tool.Hints {
	// The same value again changes nothing; another keeps the old one in the key's history.
	return tool.Hints{Title: "Remember a fact", Idempotent: true}
}
func (*storeTool) Output() *jsonschema.Schema { return storedOutput }

// factsOut is what recalling facts returns.
type factsOut struct {
	Facts []Fact `json:"facts"`
}

func (*recallTool) Hints() tool.Hints          { return tool.Hints{Title: "Recall facts", ReadOnly: true} }
func (*recallTool) Output() *jsonschema.Schema { return factsOutput }

type versionsOut struct {
	Versions []Fact `json:"versions"`
}

func (*historyTool) Hints() tool.Hints          { return tool.Hints{Title: "A fact's history", ReadOnly: true} }
func (*historyTool) Output() *jsonschema.Schema { return versionsOutput }

type removedOut struct {
	Removed int `json:"removed"`
}

func (*forgetTool) Hints() tool.Hints {
	return tool.Hints{Title: "Forget facts", Destructive: true, Idempotent: true}
}
func (*forgetTool) Output() *jsonschema.Schema { return removedOutput }

var (
	storedOutput   = tool.SchemaFor[storedOut]()
	factsOutput    = tool.SchemaFor[factsOut]()
	versionsOutput = tool.SchemaFor[versionsOut]()
	removedOutput  = tool.SchemaFor[removedOut]()
)

type recallTool struct{ Tools }

func (*recallTool) Name() string { return "memory_recall" }
func (*recallTool) Description() string {
	return "Recall facts the user asked you to remember: one by key, or those under a key prefix or in a category; " +
		"as_of (an RFC 3339 time or a date) recalls what held then."
}
func (*recallTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
		"key": map[string]any{"type": "string"}, "prefix": map[string]any{"type": "string"}, "category": map[string]any{"type": "string"},
		"as_of": map[string]any{"type": "string", "description": "An RFC 3339 time or a date: recall what held then"},
	}}
}

func (t *recallTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	var in struct {
		Key      string `json:"key"`
		Prefix   string `json:"prefix"`
		Category string `json:"category"`
		AsOf     string `json:"as_of"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	var asOf time.Time
	if in.AsOf != "" {
		var err error
		if asOf, err = timearg.Parse(in.AsOf); err != nil {
			return nil, fmt.Errorf("as_of: %v", err)
		}
	}
	scope := t.ScopeOf(inv)
	if in.Key != "" {
		var f *Fact
		var err error
		if asOf.IsZero() {
			f, err = t.Facts.Recall(ctx, scope, in.Key)
		} else {
			f, err = t.Facts.RecallAt(ctx, scope, in.Key, asOf)
		}
		if errors.Is(err, ErrNotFound) {
			return &factsOut{Facts: []Fact{}}, nil
		}
		if err != nil {
			return nil, err
		}
		return &factsOut{Facts: []Fact{*f}}, nil
	}
	var fs []Fact
	var err error
	if asOf.IsZero() {
		fs, err = t.Facts.List(ctx, scope, in.Prefix, in.Category)
	} else {
		fs, err = t.Facts.ListAt(ctx, scope, in.Prefix, in.Category, asOf)
	}
	if err != nil {
		return nil, err
	}
	if fs == nil {
		fs = []Fact{}
	}
	return &factsOut{Facts: fs[:min(len(fs), 20)]}, nil
}

type historyTool struct{ Tools }

func (*historyTool) Name() string { return "memory_history" }
func (*historyTool) Description() string {
	return "Show how a remembered fact changed: every value its key held, oldest first, each with when it held " +
		"(valid_from, valid_to) and where it came from."
}
func (*historyTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"key"},
		"properties": map[string]any{"key": map[string]any{"type": "string"}}}
}

func (t *historyTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	var in struct {
		Key string `json:"key"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Key) == "" {
		return nil, errors.New("memory_history needs the key of a fact")
	}
	versions, err := t.Facts.History(ctx, t.ScopeOf(inv), in.Key)
	if errors.Is(err, ErrNotFound) {
		return &versionsOut{Versions: []Fact{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &versionsOut{Versions: versions}, nil
}

type forgetTool struct{ Tools }

func (*forgetTool) Name() string { return "memory_forget" }
func (*forgetTool) Description() string {
	return "Forget facts: selector all, key:<key> or category:<category>. Returns how many were removed."
}
func (*forgetTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"selector"},
		"properties": map[string]any{"selector": map[string]any{"type": "string"}}}
}

func (t *forgetTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	if err := t.mayWrite(inv); err != nil {
		return nil, err
	}
	var in struct {
		Selector string `json:"selector"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	n, err := t.Facts.Forget(ctx, t.ScopeOf(inv), in.Selector)
	if err != nil {
		return nil, explain(err)
	}
	return &removedOut{Removed: n}, nil
}
