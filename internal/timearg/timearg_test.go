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
	for _, bad := range []string{"", "yesterday", "2026-13-01", "01/03/2026", "2026-03-01 09:30"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
