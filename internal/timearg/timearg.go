// Package timearg reads the instants that APIs and tools take as text: an
// RFC 3339 timestamp, or a date that stands for its midnight UTC.
package timearg

import (
	"fmt"
	"time"
)

// Parse reads an RFC 3339 timestamp (2026-03-01T09:30:00Z) or a date
// (2026-03-01). Its error says what it takes, and never wraps a kind: the
// caller says which argument it was.
func Parse(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 timestamp (2026-03-01T09:30:00Z) nor a date (2026-03-01)", s)
}
