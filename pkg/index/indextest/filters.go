package indextest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// filterEvent is one event of the filters' memory.
type filterEvent struct {
	session, author, role string
	at                    time.Time
}

// filterMemory is two sessions of one user, two speakers and the agent,
// an hour apart (one a fraction of a millisecond off the hour, so that a
// store rounding times shows), all about one garden, so that every kind of
// index finds every event; and, earlier, more of Bob's events in a third
// session than a hybrid search has candidates, that match the query
// better, so that a store that filtered after ranking would miss events.
func filterMemory() []filterEvent {
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var out []filterEvent
	for i := range fillers {
		out = append(out, filterEvent{"s0", "Bob", session.RoleUser, base.Add(-time.Duration(fillers-i) * time.Minute)})
	}
	for i, who := range []struct{ session, author, role string }{
		{"s1", "Caroline", session.RoleUser}, {"s1", "agent", session.RoleAssistant}, {"s1", "Melanie", session.RoleUser},
		{"s2", "Caroline", session.RoleUser}, {"s2", "agent", session.RoleAssistant}, {"s2", "Melanie", session.RoleUser},
		{"s2", "Caroline", session.RoleUser},
	} {
		at := base.Add(time.Duration(i) * time.Hour)
		if i == 4 {
			at = at.Add(123456 * time.Nanosecond)
		}
		out = append(out, filterEvent{who.session, who.author, who.role, at})
	}
	return out
}

// fillers is how many of Bob's events come first: more than a hybrid
// search's 40 candidates.
const fillers = 45

func (e filterEvent) text(i int) string {
	if e.author == "Bob" {
		return fmt.Sprintf("community garden plans: the community garden plans, take %d", i)
	}
	return fmt.Sprintf("notes on the community garden plans, entry %d", i)
}

// A filter keeps a search to one session, author, role or time range,
// whatever the store: it is applied before ranking (a narrow filter finds
// every event it keeps, not the few that the wide search ranks first),
// bounds are strict, and another user's events stay out.
func testFilters(t *testing.T, newIndex Factory) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	memory := filterMemory()
	handles := map[string]session.Session{}
	for _, owner := range [][2]string{{"app", "u"}, {"app", "intruder"}} {
		for i, e := range memory {
			if owner[1] == "intruder" && e.author == "Bob" {
				continue
			}
			id := owner[1] + "-" + e.session
			s := handles[id]
			if s == nil {
				resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: owner[0], UserID: owner[1], SessionID: id})
				if err != nil {
					t.Fatal(err)
				}
				s, handles[id] = resp.Session, resp.Session
			}
			ev := &session.Event{Author: e.author, Timestamp: e.at, Message: session.NewTextMessage(e.role, e.text(i))}
			if err := sessions.AppendEvent(ctx, s, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range handles {
		if err := idx.Index(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	at := func(i int) time.Time { return memory[fillers+i].at }
	for _, tc := range []struct {
		name   string
		filter index.Filter
		want   func(e filterEvent) bool
	}{
		{"none", index.Filter{}, func(filterEvent) bool { return true }},
		{"session", index.Filter{SessionID: "u-s2"}, func(e filterEvent) bool { return e.session == "s2" }},
		{"the crowded session", index.Filter{SessionID: "u-s0"}, func(e filterEvent) bool { return e.session == "s0" }},
		{"author", index.Filter{Author: "Melanie"}, func(e filterEvent) bool { return e.author == "Melanie" }},
		{"role", index.Filter{Role: session.RoleAssistant}, func(e filterEvent) bool { return e.role == session.RoleAssistant }},
		{"after, strictly", index.Filter{After: at(2)}, func(e filterEvent) bool { return e.at.After(at(2)) }},
		{"before, strictly", index.Filter{Before: at(5)}, func(e filterEvent) bool { return e.at.Before(at(5)) }},
		{"after, a microsecond before an event", index.Filter{After: at(4).Add(-time.Microsecond)}, func(e filterEvent) bool { return !e.at.Before(at(4)) }},
		{"after, a microsecond past an event", index.Filter{After: at(4).Add(time.Microsecond)}, func(e filterEvent) bool { return e.at.After(at(4)) }},
		{"before, a microsecond past an event", index.Filter{Before: at(4).Add(time.Microsecond)}, func(e filterEvent) bool { return !e.at.After(at(4)) }},
		{"window", index.Filter{After: at(1), Before: at(5)}, func(e filterEvent) bool { return e.at.After(at(1)) && e.at.Before(at(5)) }},
		{"all at once", index.Filter{SessionID: "u-s2", Author: "Caroline", Role: session.RoleUser, After: at(3)},
			func(e filterEvent) bool { return e.session == "s2" && e.author == "Caroline" && e.at.After(at(3)) }},
		{"another user's session", index.Filter{SessionID: "intruder-s1"}, func(filterEvent) bool { return false }},
		{"nothing kept", index.Filter{Author: "Nobody"}, func(filterEvent) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for i, e := range memory {
				if tc.want(e) {
					want = append(want, e.text(i))
				}
			}
			// The limit is the number of events kept: a store that ranked
			// before filtering would fill it with events the filter drops.
			limit := max(len(want), 1)
			resp, err := idx.Search(ctx, &index.SearchRequest{Query: "community garden plans", AppName: "app", UserID: "u", Limit: limit, Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.Results {
				if !strings.HasPrefix(r.SessionID, "u-") {
					t.Fatalf("found another user's event %q in %s", r.Content, r.SessionID)
				}
			}
			got := contents(resp.Results)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("filter %+v found %q, want %q", tc.filter, got, want)
			}
		})
	}
}

// A search that prefers recent results puts a newer, a little less
// relevant event before an older one that ranks first without it, and
// says so in the results' recency signal: the older one's weight is near
// the floor of 1/4, never below it.
func testRecency(t *testing.T, newIndex Factory) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	old, recent := "address: Elm Street, street address", "address is Oak Street now"
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, text := range []string{old, recent} {
		ev := &session.Event{Author: "user", Timestamp: base.Add(time.Duration(i) * 72 * time.Hour), Message: session.NewTextMessage(session.RoleUser, text)}
		if err := sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Index(ctx, resp.Session); err != nil {
		t.Fatal(err)
	}
	req := &index.SearchRequest{Query: "address Street", AppName: "app", UserID: "u", Limit: 2}
	plain, err := idx.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range plain.Results {
		if _, ok := r.Signals[index.SignalRecency]; ok {
			t.Errorf("a search that does not prefer recent results has a recency signal: %+v", r)
		}
	}
	if idx.Name() == string(index.KindKeyword) && (len(plain.Results) != 2 || plain.Results[0].Content != old) {
		t.Fatalf("without recency found %q, want the older, more relevant event first", contents(plain.Results))
	}
	req.RecencyHalfLife = time.Hour
	got, err := idx.Search(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	rs := got.Results
	if len(rs) != 2 || rs[0].Content != recent || rs[1].Content != old {
		t.Fatalf("preferring recent results found %q, want the newer event first", contents(rs))
	}
	newest, older := rs[0].Signals[index.SignalRecency], rs[1].Signals[index.SignalRecency]
	if newest.Rank != 1 || newest.Score != 1 || older.Rank != 2 || math.Abs(older.Score-(0.25+0.75*math.Exp2(-72))) > 1e-12 {
		t.Errorf("recency signals %+v and %+v, want rank 1 weight 1 and rank 2 weight 1/4 + 3/4 × 2^-72", newest, older)
	}
	if rs[0].Score <= rs[1].Score {
		t.Errorf("scores %v then %v, want them ordered", rs[0].Score, rs[1].Score)
	}
	req.Limit = 1
	if got, err := idx.Search(ctx, req); err != nil || len(got.Results) != 1 || got.Results[0].Content != recent {
		t.Errorf("the best result preferring recent ones = %v, %v; want the newer event", got, err)
	}
}
