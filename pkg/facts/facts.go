// Package facts is curated memory: a small store of durable facts users and
// agents write on purpose ("always deploy via Konflux"), scoped to an app,
// a user or a session, expiring, validated, and encrypted at rest.
package facts

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/ident"
)

// The scopes a fact can live in. A handle on one scope can never reach another.
const (
	ScopeApp     = "app"
	ScopeUser    = "user"
	ScopeSession = "session"
)

// Scope names where facts live: an app's, one user's, or one session's.
type Scope struct {
	Kind                 string
	App, User, SessionID string
}

// AppScope is every user's facts of an app.
func AppScope(app string) Scope { return Scope{Kind: ScopeApp, App: app} }

// UserScope is one user's facts (the default scope).
func UserScope(app, user string) Scope { return Scope{Kind: ScopeUser, App: app, User: user} }

// SessionScope is one session's facts.
func SessionScope(app, user, session string) Scope {
	return Scope{Kind: ScopeSession, App: app, User: user, SessionID: session}
}

func (s Scope) check() error {
	ok := s.App != ""
	switch s.Kind {
	case ScopeApp:
		ok = ok && s.User == "" && s.SessionID == ""
	case ScopeUser:
		ok = ok && s.User != "" && s.SessionID == ""
	case ScopeSession:
		ok = ok && s.User != "" && s.SessionID != ""
	default:
		ok = false
	}
	if !ok {
		return &ValidationError{Code: "invalid_scope", Message: fmt.Sprintf("scope %+v is not an app, user or session scope with its IDs", s)}
	}
	// The IDs every other store takes: a fact under an ID they refuse
	// could be neither erased nor exported with the rest of the user.
	for _, id := range []struct{ what, id string }{{"app name", s.App}, {"user ID", s.User}, {"session ID", s.SessionID}} {
		if id.id == "" {
			continue
		}
		if problem := ident.Problem(id.what, id.id); problem != "" {
			return &ValidationError{Code: "invalid_scope", Message: problem}
		}
	}
	return nil
}

// String is the scope as it is bound into each ciphertext.
func (s Scope) String() string {
	return s.Kind + "\x00" + s.App + "\x00" + s.User + "\x00" + s.SessionID
}

// Fact is one version of a remembered fact. Storing a key again does not
// overwrite it: the new value supersedes the old, which keeps its value
// and says until when it held (ValidTo) and what replaced it
// (SupersededBy). History returns a key's versions, and RecallAt and
// ListAt what held at a past instant.
type Fact struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	Category  string    `json:"category"`
	Tags      []string  `json:"tags,omitempty"`
	CreatedAt time.Time `json:"created_at"` // when the key's first version was written
	UpdatedAt time.Time `json:"updated_at"` // when this version was written: its ValidFrom
	ExpiresAt time.Time `json:"expires_at"`
	ValidFrom time.Time `json:"valid_from"`
	// ValidTo is when the version stopped holding: superseded by another
	// (SupersededBy) or invalidated. Nil while it is current.
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	Supersedes   string     `json:"supersedes,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Source       Source     `json:"source"`
	// Decision is what the write that returned the fact did; empty on reads.
	Decision Decision `json:"decision,omitempty"`
}

// Source is where a fact came from: who wrote it, or which conversation
// it was extracted from.
type Source struct {
	Kind string `json:"kind"` // SourceWritten or SourceExtracted
	// By is what wrote it: a credential's role (admin, app, user), "agent",
	// "mcp", or "sdk" for a program calling the Go API.
	By        string   `json:"by,omitempty"`
	Agent     string   `json:"agent,omitempty"`      // the agent whose tool wrote it
	SessionID string   `json:"session_id,omitempty"` // the session it was written in, or extracted from
	EventIDs  []string `json:"event_ids,omitempty"`  // the events it was extracted from
	Model     string   `json:"model,omitempty"`      // the model that extracted it
	// Claimed is, for an imported version, the source its archive gave:
	// what another deployment said, kept apart and not vouched for.
	Claimed *Claim `json:"claimed,omitempty"`
}

// Claim is the source an archive gave an imported version.
type Claim struct {
	Kind      string   `json:"kind"`
	By        string   `json:"by,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	EventIDs  []string `json:"event_ids,omitempty"`
	Model     string   `json:"model,omitempty"`
}

// claim is what src says of itself, as an archive's claim.
func (src Source) claim() *Claim {
	if src.Claimed != nil { // imported before: the first claim is the one to keep
		return src.Claimed
	}
	return &Claim{Kind: src.Kind, By: src.By, Agent: src.Agent, SessionID: src.SessionID, EventIDs: src.EventIDs, Model: src.Model}
}

// The kinds of source.
const (
	SourceWritten   = "written"
	SourceExtracted = "extracted"
	SourceImported  = "imported" // restored from a user's archive (Restore)
)

// Decision is what storing a fact did.
type Decision string

// The decisions.
const (
	// Added: the key had no current value.
	Added Decision = "added"
	// Updated: the key's value was superseded by the new one.
	Updated Decision = "updated"
	// Unchanged: the key already held this value; its expiry was renewed.
	Unchanged Decision = "unchanged"
	// Duplicate: another key of the scope already held this fact in other
	// words (see sameFact), and the request asked to merge it
	// (MergeDuplicates); nothing was added, that fact is returned, and its
	// expiry was renewed.
	Duplicate Decision = "duplicate"
)

// StoreRequest is a fact to store. A TTL of 0 means the policy's default;
// a Source without a Kind is written by a program ("sdk").
type StoreRequest struct {
	Key, Value, Category string
	Tags                 []string
	TTL                  time.Duration
	Source               Source
	// MergeDuplicates: when another key of the scope holds this fact in
	// other words, renew that one and store nothing (Decision Duplicate).
	// Without it such a write is refused with ErrDuplicate, so that no
	// write is dropped unless its writer said it may be.
	MergeDuplicates bool
}

// maxTTLSeconds is the longest TTL a time.Duration holds, about 292 years.
const maxTTLSeconds = int64(math.MaxInt64 / time.Second)

// TTLSeconds converts a TTL given in seconds, as the REST API and the tools
// take it. A number too large for a time.Duration is refused: multiplied
// out it would wrap around to some other TTL.
func TTLSeconds(n int64) (time.Duration, error) {
	if n > maxTTLSeconds {
		return 0, refuse("ttl_invalid", "ttl_seconds %d is too large: give at most %d (the policy keeps a fact a year at most), or 0 for the default", n, maxTTLSeconds)
	}
	return time.Duration(n) * time.Second, nil
}

// DefaultCategory is the category of facts stored without one.
const DefaultCategory = "user_facts"

var (
	// ErrDuplicate: another key of the scope holds the fact a write
	// states, and the write did not ask to merge it (MergeDuplicates).
	ErrDuplicate = errkind.New(errkind.Conflict, "this scope already holds this fact under another key")
	// ErrNotFound: no live fact with that key in the scope.
	ErrNotFound = errkind.New(errkind.NotFound, "fact not found")
	// ErrWrongKey: the encryption key is not the one the facts were written with.
	ErrWrongKey = errors.New("the facts encryption key does not match the stored facts")
)

// ValidationError is a fact the policy refuses, with a stable code per rule.
type ValidationError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *ValidationError) Error() string { return e.Message + " (" + e.Code + ")" }

// Unwrap makes a refusal an errkind.InvalidArgument.
func (e *ValidationError) Unwrap() error { return errkind.InvalidArgument }
