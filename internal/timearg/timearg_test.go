package timearg

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-03-01":                  time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		"2026-03-01T09:30:00Z":        time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC),
		"2026-03-01T09:30:00.5+02:00": time.Date(2026, 3, 1, 7, 30, 0, 5e8, time.UTC),
	} {
		if got, err := Parse(in); err != nil || !got.Equal(want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// The zero time means "not given" to the callers: the earliest instant
	// written out is read as an instant all the same.
	for _, earliest := range []string{"0001-01-01", "0001-01-01T00:00:00Z"} {
		if got, err := Parse(earliest); err != nil || got.IsZero() || got.After(time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)) {
			t.Errorf("Parse(%q) = %v, %v; want the first instant that is not the zero time", earliest, got, err)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-13-01", "01/03/2026", "2026-03-01 09:30"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
