package index_test

import (
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// A search reads the times its query names back from when it is asked:
// now, or AskedAt when a replay of past conversations sets it.
func TestSearchCountsBackFromWhenItIsAsked(t *testing.T) {
	idx := newHybrid(t)
	asked := time.Date(2023, 3, 20, 11, 50, 0, 0, time.UTC)
	for _, daysBefore := range []int{60, 5, 90} {
		indexSaid(t, idx, asked.AddDate(0, 0, -daysBefore), "I posted in the climbing group")
	}
	search := func(query string, at time.Time) time.Time {
		t.Helper()
		rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: query, AppName: "a", UserID: "u", AskedAt: at})
		if err != nil || len(rs.Results) != 3 {
			t.Fatalf("%q: %v, %+v", query, err, rs)
		}
		return rs.Results[0].Timestamp
	}
	if got := search("what did I post in the climbing group 5 days ago?", asked); !got.Equal(asked.AddDate(0, 0, -5)) {
		t.Errorf("5 days before %s: the first result is from %s", asked, got)
	}
	if got := search("what did I post in the climbing group two months ago?", asked); !got.Equal(asked.AddDate(0, 0, -60)) {
		t.Errorf("two months before %s (January): the first result is from %s", asked, got)
	}
	if got := search("what did I post in the climbing group 90 days ago?", asked); !got.Equal(asked.AddDate(0, 0, -90)) {
		t.Errorf("90 days before %s: the first result is from %s", asked, got)
	}
	// Unset, it is now: years after every one of them, so none is
	// preferred, and the newest of equals comes first.
	if got := search("what did I post in the climbing group 90 days ago?", time.Time{}); !got.Equal(asked.AddDate(0, 0, -5)) {
		t.Errorf("asked now, the first result is from %s, want the newest", got)
	}
}

// The words that name a time are matched against when each turn was
// said, not searched for: "two months ago" finds no turn by its "two".
func TestSearchLooksForNoTimeWords(t *testing.T) {
	idx := newHybrid(t)
	asked := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	indexSaid(t, idx, asked.AddDate(0, -2, 0), "The boiler broke and we were freezing for two days", "My daughter signed up for the school choir")
	query := "What did my daughter sign up for two months ago?"
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: query, AppName: "a", UserID: "u", AskedAt: asked})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.Results {
		if _, found := r.Signals["keyword"]; found != (r.Content == "My daughter signed up for the school choir") {
			t.Errorf("%q: %q found by its words: %v", query, r.Content, found)
		}
	}
}

func newHybrid(t *testing.T) *index.Index {
	t.Helper()
	idx, err := index.NewHybrid(hashEmbedder(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// indexSaid indexes a new session of user u of app a whose turns say
// texts, all at once.
func indexSaid(t *testing.T, idx *index.Index, at time.Time, texts ...string) {
	t.Helper()
	var events []*session.Event
	for _, text := range texts {
		events = append(events, &session.Event{Author: "user", Timestamp: at, Message: session.NewTextMessage(session.RoleUser, text)})
	}
	indexSession(t, idx, events...)
}

// indexSession appends events to a new session of user u of app a, and
// indexes it.
func indexSession(t *testing.T, idx *index.Index, events ...*session.Event) {
	t.Helper()
	sessions := session.NewInMemoryService()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
}
