package session

import "fmt"

func notFound(k sessionKey) error {
	return fmt.Errorf("%w: app %q, user %q, session %q", ErrNotFound, k.app, k.user, k.id)
}

func alreadyExists(k sessionKey) error {
	return fmt.Errorf("session %q of app %q, user %q: %w", k.id, k.app, k.user, ErrAlreadyExists)
}

func eventExists(k sessionKey, eventID string) error {
	return fmt.Errorf("event %q in session %q: %w", eventID, k.id, ErrAlreadyExists)
}

func conflict(k sessionKey, expected, actual int64) error {
	return fmt.Errorf("%w: session %q was expected at sequence %d but is at %d: reload it and retry", ErrConflict, k.id, expected, actual)
}
