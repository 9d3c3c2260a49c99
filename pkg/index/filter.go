package index

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hectormem/hector/internal/timearg"
	"github.com/hectormem/hector/pkg/session"
)

// Filter keeps a search to some of an owner's events; its zero value keeps
// them all. Every store applies it before ranking, so a narrow filter
// finds as many results as a wide one, and the index checks each result
// against it again, as it checks the owner.
type Filter struct {
	SessionID string    // one session's events
	Author    string    // events by this author, exactly as written
	Role      string    // messages of this role: user, assistant, system or tool
	After     time.Time // events after this instant (zero: no bound)
	Before    time.Time // events before this instant (zero: no bound)
}

// IsZero reports whether the filter keeps every event.
func (f Filter) IsZero() bool { return f == Filter{} }

// Window is the time range a store asks for: inclusive, and a millisecond
// wider than (After, Before) at each end, so that a store that keeps times
// (or reads bounds) rounded to microseconds or milliseconds never leaves
// out an event the filter keeps. Zero bounds stay zero.
func (f Filter) Window() (from, to time.Time) {
	if !f.After.IsZero() {
		from = f.After.Add(-time.Millisecond)
	}
	if !f.Before.IsZero() {
		to = f.Before.Add(time.Millisecond)
	}
	return from, to
}

// Keeps reports whether the filter keeps a document.
func (f Filter) Keeps(d *Document) bool {
	return (f.SessionID == "" || d.SessionID == f.SessionID) &&
		(f.Author == "" || d.Author == f.Author) &&
		(f.Role == "" || d.Role == f.Role) &&
		(f.After.IsZero() || d.Timestamp.After(f.After)) &&
		(f.Before.IsZero() || d.Timestamp.Before(f.Before))
}

// keepsResult is Keeps for a store's result.
func (f Filter) keepsResult(r SearchResult) bool {
	return f.Keeps(&Document{SessionID: r.SessionID, Author: r.Author, Role: r.Role, Timestamp: r.Timestamp})
}

// Roles are the roles a filter may name.
var Roles = []string{session.RoleUser, session.RoleAssistant, session.RoleSystem, session.RoleTool}

// maxFilterText bounds a filter's session ID and author.
const maxFilterText = 1024

func (f Filter) validate() error {
	for _, field := range []struct{ name, value string }{{"session_id", f.SessionID}, {"author", f.Author}} {
		if len(field.value) > maxFilterText || !utf8.ValidString(field.value) || strings.IndexByte(field.value, 0) >= 0 {
			return fmt.Errorf("%w: filter %s must be valid UTF-8 without NUL, at most %d bytes", ErrInvalidArgument, field.name, maxFilterText)
		}
	}
	if f.Role != "" && !slices.Contains(Roles, f.Role) {
		return fmt.Errorf("%w: filter role %q is not one of %s", ErrInvalidArgument, f.Role, strings.Join(Roles, ", "))
	}
	if !f.After.IsZero() && !f.Before.IsZero() && !f.After.Before(f.Before) {
		return fmt.Errorf("%w: filter after (%s) must be earlier than before (%s)", ErrInvalidArgument,
			f.After.Format(time.RFC3339), f.Before.Format(time.RFC3339))
	}
	return nil
}

// DefaultRecencyHalfLife is the half-life of the search_memory tool's
// prefer_recent.
const DefaultRecencyHalfLife = 7 * 24 * time.Hour

// recencyFloor is the weight an arbitrarily old result keeps. Without
// one, a recent message that the query barely matches (found by meaning
// alone, far down the list) overtook the messages that answer it as soon
// as they were a few half-lives older: preferring recent results should
// order the relevant ones, not replace them.
const recencyFloor = 0.25

// preferRecent weighs each result by its age, counted from the newest
// result: the weight falls from 1 toward recencyFloor, halfway there after
// one half-life. The weight is the result's "recency" signal, ranked from
// the newest.
func preferRecent(results []SearchResult, halfLife time.Duration) {
	if len(results) == 0 {
		return
	}
	newest := slices.MaxFunc(results, func(a, b SearchResult) int { return a.Timestamp.Compare(b.Timestamp) }).Timestamp
	byAge := make([]int, len(results))
	for i := range byAge {
		byAge[i] = i
	}
	slices.SortStableFunc(byAge, func(a, b int) int { return results[b].Timestamp.Compare(results[a].Timestamp) })
	for rank, i := range byAge {
		r := &results[i]
		weight := recencyWeight(newest.Sub(r.Timestamp), halfLife)
		r.Score *= weight // scores are positive: bestMatches keeps no other
		r.Signals = maps.Clone(r.Signals)
		if r.Signals == nil {
			r.Signals = map[string]Signal{}
		}
		r.Signals[SignalRecency] = Signal{Rank: rank + 1, Score: weight}
	}
	sortResults(results)
}

// recencyWeight is the weight of a result age older than the newest.
func recencyWeight(age, halfLife time.Duration) float64 {
	return recencyFloor + (1-recencyFloor)*math.Exp2(-age.Seconds()/halfLife.Seconds())
}

// SignalRecency names the recency signal of a search that prefers recent
// results.
const SignalRecency = "recency"

// FilterArgs is a Filter as JSON carries it (the REST API, the
// search_memory tool): times as RFC 3339 timestamps or dates.
type FilterArgs struct {
	SessionID string `json:"session_id,omitempty"`
	Author    string `json:"author,omitempty"`
	Role      string `json:"role,omitempty"`
	After     string `json:"after,omitempty"`
	Before    string `json:"before,omitempty"`
}

// Filter reads the arguments; a time it cannot read is an error wrapping
// ErrInvalidArgument (the rest is checked by Search).
func (a FilterArgs) Filter() (Filter, error) {
	f := Filter{SessionID: a.SessionID, Author: a.Author, Role: a.Role}
	for _, bound := range []struct {
		name, value string
		to          *time.Time
	}{{"after", a.After, &f.After}, {"before", a.Before, &f.Before}} {
		if bound.value == "" {
			continue
		}
		t, err := timearg.Parse(bound.value)
		if err != nil {
			return Filter{}, fmt.Errorf("%w: %s %v", ErrInvalidArgument, bound.name, err)
		}
		*bound.to = t
	}
	return f, nil
}

// maxHalfLifeDays keeps a half-life in days within a time.Duration.
const maxHalfLifeDays = 100_000

// ParseHalfLife reads a recency half-life: a Go duration ("36h", "90m") or
// a number of days ("7d", "0.5d").
func ParseHalfLife(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, perr := strconv.ParseFloat(days, 64); perr == nil && n > 0 && n <= maxHalfLifeDays {
			d, err = time.Duration(n*float64(24*time.Hour)), nil
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: recency half-life %q must be a positive duration such as \"7d\", \"36h\" or \"90m\"", ErrInvalidArgument, s)
	}
	return d, nil
}
