// Package tool defines the tools an agent's model can call.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// Invocation is the turn a tool runs in. Its identity comes from the
// server's auth and the session, never from the model's arguments: a tool
// that reads memory reads this invocation's (app, user) and nobody else's.
type Invocation struct {
	AppName, UserID, SessionID, InvocationID string
	// Approver: the turn was started by a credential trusted to approve
	// writes to curated facts.
	Approver bool
}

// Tool is something a model can call.
type Tool interface {
	Name() string
	Description() string
	// Parameters is the JSON schema of the arguments.
	Parameters() map[string]any
	// Call runs the tool. An error is shown to the model as the tool's result.
	Call(ctx context.Context, inv Invocation, args json.RawMessage) (any, error)
}

// Hints say what calling a tool does, for clients that show it or weigh
// it before a call (MCP's tool annotations).
type Hints struct {
	Title string
	// ReadOnly: it changes nothing.
	ReadOnly bool
	// Destructive: it may remove what is kept (when not ReadOnly).
	Destructive bool
	// Idempotent: calling it again with the same arguments changes
	// nothing more (when not ReadOnly).
	Idempotent bool
}

// Described is a tool that says what calling it does and what it returns.
type Described interface {
	Tool
	Hints() Hints
	// Output is the JSON Schema of what Call returns.
	Output() *jsonschema.Schema
}

// SchemaFor is the JSON Schema of T as encoding/json writes it, in the
// portable dialect MCP clients map onto their models' (one type per
// schema, no bare true). T is a tool's result type, fixed at compile time:
// a type the schema cannot describe is a programming error.
func SchemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tool: no JSON Schema for %T: %v", *new(T), err))
	}
	portable(s)
	return s
}

// portable rewrites what the schema library infers that clients map
// badly: a slice's or pointer's ["null", T] becomes T, since a tool's
// result omits what it does not have rather than sending null (the
// output tests hold every tool to it); a free-form object's values are
// left unconstrained rather than given a schema that says nothing; and a
// value that may be anything says which JSON types that is.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	if s.AdditionalProperties != nil && isEmpty(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	}
	children := []*jsonschema.Schema{s.Items, s.AdditionalProperties}
	for _, p := range s.Properties {
		children = append(children, p)
	}
	for _, c := range children {
		if c != nil && isEmpty(c) {
			for _, t := range []string{"object", "array", "string", "number", "boolean", "null"} {
				c.AnyOf = append(c.AnyOf, &jsonschema.Schema{Type: t})
			}
		}
		portable(c)
	}
}

func isEmpty(s *jsonschema.Schema) bool { return reflect.ValueOf(*s).IsZero() }
