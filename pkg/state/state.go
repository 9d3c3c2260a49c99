// Package state defines Hector's scoped key-value state: which scope a key
// belongs to, what a valid key and value are, and how the scopes of one
// session combine into the single view an agent reads.
//
// A key's prefix is its scope:
//
//	app:name    shared by every user and session of an app
//	user:name   shared by every session of one user
//	temp:name   lives for one invocation and is never stored
//	name        belongs to one session
package state

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/errkind"
)

// Key prefixes that select a scope. A key without one of them is session-scoped.
const (
	KeyPrefixApp  = "app:"
	KeyPrefixUser = "user:"
	KeyPrefixTemp = "temp:"
)

// MaxKeyChars bounds a key's length, in characters (what the SQL columns
// hold), so keys stay cheap to index in every backend.
const MaxKeyChars = 256

var (
	// ErrStateKeyNotExist is returned by State.Get for a key that has no value.
	ErrStateKeyNotExist = errors.New("state key does not exist")
	// ErrInvalidKey wraps every key validation failure.
	ErrInvalidKey = errkind.New(errkind.InvalidArgument, "invalid state key")
	// ErrInvalidValue wraps every value validation failure.
	ErrInvalidValue = errkind.New(errkind.InvalidArgument, "invalid state value")
)

// Scope says who shares a key.
type Scope int

// The scopes, from the narrowest lifetime to the widest sharing.
const (
	ScopeSession Scope = iota
	ScopeTemp
	ScopeUser
	ScopeApp
)

func (s Scope) String() string {
	switch s {
	case ScopeApp:
		return "app"
	case ScopeUser:
		return "user"
	case ScopeTemp:
		return "temp"
	default:
		return "session"
	}
}

// State is a mutable view of key-value state.
type State interface {
	// Get returns the value of key, or ErrStateKeyNotExist.
	Get(key string) (any, error)
	// Set validates key and value and stores the value.
	Set(key string, value any) error
	// Delete removes key; deleting an absent key is not an error.
	Delete(key string) error
	// All yields every key and value in key order.
	All() iter.Seq2[string, any]
}

// ScopeOf validates key and returns its scope. An empty key, a bare prefix
// such as "user:", a key over MaxKeyBytes, invalid UTF-8 and control
// characters are rejected with an error wrapping ErrInvalidKey.
func ScopeOf(key string) (Scope, error) {
	if key == "" {
		return 0, keyError(key, "is empty")
	}
	if !utf8.ValidString(key) {
		return 0, keyError(key, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(key); n > MaxKeyChars {
		return 0, keyError(string([]rune(key)[:32])+"…", fmt.Sprintf("has %d characters, over the limit of %d", n, MaxKeyChars))
	}
	if strings.ContainsFunc(key, isControl) {
		return 0, keyError(key, "contains a control character")
	}
	for _, p := range []struct {
		prefix string
		scope  Scope
	}{{KeyPrefixApp, ScopeApp}, {KeyPrefixUser, ScopeUser}, {KeyPrefixTemp, ScopeTemp}} {
		if rest, ok := strings.CutPrefix(key, p.prefix); ok {
			if rest == "" {
				return 0, keyError(key, "is a bare scope prefix: add a name after it, as in \""+p.prefix+"name\"")
			}
			return p.scope, nil
		}
	}
	return ScopeSession, nil
}

// AppKey returns the first, in sorted order, of delta's app: keys, "" when
// it has none: app state is every user's, which one user may not write.
func AppKey(delta map[string]any) string {
	first := ""
	for k := range delta {
		if strings.HasPrefix(k, KeyPrefixApp) && (first == "" || k < first) {
			first = k
		}
	}
	return first
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func keyError(key, problem string) error {
	return &keyErr{key: key, problem: problem}
}

type keyErr struct{ key, problem string }

func (e *keyErr) Error() string { return "state key " + quote(e.key) + " " + e.problem }
func (e *keyErr) Unwrap() error { return ErrInvalidKey }

func quote(s string) string {
	if s == "" {
		return `""`
	}
	return `"` + strings.Map(func(r rune) rune {
		if isControl(r) {
			return '?'
		}
		return r
	}, s) + `"`
}
