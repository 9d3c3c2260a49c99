package extract

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// ledger counts each app's tokens in the current hour and day.
type ledger struct {
	budget Budget
	mu     sync.Mutex
	spent  map[string]*spending
}

type spending struct {
	hour, day     time.Time // the windows counted
	inHour, inDay int
}

func newLedger(b Budget) *ledger { return &ledger{budget: b, spent: map[string]*spending{}} }

// current returns app's spending, its windows moved on to now's; callers hold mu.
func (l *ledger) current(app string, now time.Time) *spending {
	s := l.spent[app]
	if s == nil {
		s = &spending{}
		l.spent[app] = s
	}
	now = now.UTC()
	if hour := now.Truncate(time.Hour); !s.hour.Equal(hour) {
		s.hour, s.inHour = hour, 0
	}
	if day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC); !s.day.Equal(day) {
		s.day, s.inDay = day, 0
	}
	return s
}

// allow reports whether app may make a call now, and if not, when it may.
func (l *ledger) allow(app string, now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.current(app, now)
	if l.budget.PerDay > 0 && s.inDay >= l.budget.PerDay {
		return s.day.Add(24 * time.Hour), false
	}
	if l.budget.PerHour > 0 && s.inHour >= l.budget.PerHour {
		return s.hour.Add(time.Hour), false
	}
	return time.Time{}, true
}

// spend counts a call's tokens.
func (l *ledger) spend(app string, tokens int, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.current(app, now)
	s.inHour += tokens
	s.inDay += tokens
}

// AppUsage is what one app spent in the current hour and day.
type AppUsage struct {
	App        string `json:"app"`
	HourTokens int    `json:"hour_tokens"`
	DayTokens  int    `json:"day_tokens"`
}

// usage returns every app's spending in now's windows, by app name.
func (l *ledger) usage(now time.Time) []AppUsage {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AppUsage
	for app := range l.spent {
		s := l.current(app, now)
		out = append(out, AppUsage{App: app, HourTokens: s.inHour, DayTokens: s.inDay})
	}
	slices.SortFunc(out, func(a, b AppUsage) int { return strings.Compare(a.App, b.App) })
	return out
}
