package artifacts

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/ident"
)

// MaxNameChars is the longest artifact name, in characters: what the SQL
// stores' column holds.
const MaxNameChars = 255

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// owner is where an artifact is stored: its session, or "" for the user's.
type owner struct{ app, user, session string }

// validateName checks a name: non-empty, at most 255 characters, and
// nothing that could climb out of a directory or confuse a terminal.
func validateName(name string) error {
	bare := strings.TrimPrefix(name, UserPrefix)
	switch {
	case bare == "":
		return invalid("artifact name %q is empty", name)
	case !utf8.ValidString(name):
		return invalid("artifact name %q is not valid UTF-8", name)
	case utf8.RuneCountInString(name) > MaxNameChars:
		return invalid("artifact name has %d characters, over the limit of %d", utf8.RuneCountInString(name), MaxNameChars)
	case strings.ContainsAny(name, `/\`):
		return invalid("artifact name %q contains a slash: names are flat, like report.pdf", name)
	case strings.Contains(name, ".."):
		return invalid("artifact name %q contains \"..\"", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("artifact name %q contains a NUL or control character", name)
	}
	return nil
}

func validateSession(app, user, session string) error {
	for _, f := range [][2]string{{"app name", app}, {"user ID", user}, {"session ID", session}} {
		if err := ident.Check(f[0], f[1]); err != nil {
			return err
		}
	}
	return nil
}

// validateView checks what a listing is seen from: a session, or the
// user alone (session "").
func validateView(app, user, session string) error {
	if session == "" {
		return validateSession(app, user, "-")
	}
	return validateSession(app, user, session)
}

// resolve validates ref and returns where its name is stored.
func resolve(ref Ref) (owner, error) {
	if err := validateView(ref.AppName, ref.UserID, ref.SessionID); err != nil {
		return owner{}, err
	}
	if err := validateName(ref.Name); err != nil {
		return owner{}, err
	}
	if strings.HasPrefix(ref.Name, UserPrefix) {
		return owner{ref.AppName, ref.UserID, ""}, nil
	}
	if ref.SessionID == "" {
		return owner{}, invalid("artifact %q is a session's: name its session, or give it the %q prefix to make it the user's", ref.Name, UserPrefix)
	}
	return owner{ref.AppName, ref.UserID, ref.SessionID}, nil
}

func encodeMetadata(m map[string]any) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", invalid("artifact metadata cannot be stored as JSON: %v", err)
	}
	return string(raw), nil
}

func decodeMetadata(raw string) (map[string]any, error) {
	if raw == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("artifacts: decoding stored metadata: %w", err)
	}
	return m, nil
}

func notFound(ref Ref, version int64) error {
	if version > 0 {
		return fmt.Errorf("%w: %q version %d", ErrNotFound, ref.Name, version)
	}
	return fmt.Errorf("%w: %q", ErrNotFound, ref.Name)
}
