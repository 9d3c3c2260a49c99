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
//
// It never returns the zero time, which callers take for an argument not
// given ("now"): 0001-01-01 is read one nanosecond later, which is as far
// before anything Hector holds.
func Parse(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.IsZero() {
				t = t.Add(time.Nanosecond)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 timestamp (2026-03-01T09:30:00Z) nor a date (2026-03-01)", s)
}
