// Package tool defines the tools an agent's model can call.
package tool

import (
	"context"
	"encoding/json"
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
