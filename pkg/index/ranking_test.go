package index_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// A turn that holds every word of the question, once each in a long
// sentence, is BM25's 61st, behind 60 short turns that each repeat one of
// them. Found by the vector alone it ranks below them; with its words too
// it holds the whole question and they a third of it, so it comes first,
// however deep in the keyword list it was found (see keywordCandidates).
func TestHybridFindsTheTurnHoldingTheWholeQuestionDeepInTheKeywordList(t *testing.T) {
	idx := newHybrid(t)
	var texts []string
	for i := range 20 {
		for _, w := range []string{"red", "car", "wash"} {
			texts = append(texts, fmt.Sprintf("%s, %s and %s again, number %d", w, w, w, i))
		}
	}
	const whole = "On Sunday, after three long weekends of putting it off, I finally took the old red car down the road " +
		"to the wash by the bakery, because our muddy winter trip to the hills with the dog, the children, two bicycles " +
		"and a tent had left it looking like a tractor, and my neighbour had started making jokes about it over the fence"
	indexSaid(t, idx, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), append(texts, whole)...)
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "wash the red car", AppName: "a", UserID: "u", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Results) == 0 || rs.Results[0].Content != whole {
		for i, r := range rs.Results {
			t.Logf("%d. %q %+v", i+1, r.Content, r.Signals)
		}
		t.Fatal("the turn holding the whole question is not first")
	}
	if k := rs.Results[0].Signals["keyword"]; k.Rank <= 40 {
		t.Errorf("found at keyword rank %d: the test no longer puts it past 40", k.Rank)
	}
}

// An assistant that restates what it was told, turns later, does not rank
// above the user who said it (see countAssistantsLess).
func TestTheUserWhoSaidItRanksAboveTheAssistantWhoRestatedIt(t *testing.T) {
	idx := newHybrid(t)
	said := "On Saturday I went to the flea market to buy a bookshelf, and found a lovely old oak one"
	indexDialogue(t, idx,
		said, "Lovely! What are you going to put on it?",
		"Mostly cookbooks and a few plants", "Plants can brighten a room.",
		"Which plants like shade?", "Ferns will look great on the bookshelf you went to buy!")
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "where did I buy my bookshelf", AppName: "a", UserID: "u", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Results) == 0 || rs.Results[0].Content != said {
		for i, r := range rs.Results {
			t.Logf("%d. %s %q %.3f", i+1, r.Role, r.Content, r.Score)
		}
		t.Fatal("the user's own statement is not first")
	}
}

// indexDialogue indexes a new session of user u of app a whose turns are
// the user's and the assistant's in turn, the user's first.
func indexDialogue(t *testing.T, idx *index.Index, turns ...string) {
	t.Helper()
	var events []*session.Event
	for i, text := range turns {
		author, role := "user", session.RoleUser
		if i%2 == 1 {
			author, role = "helper", session.RoleAssistant
		}
		events = append(events, &session.Event{Author: author, Message: session.NewTextMessage(role, text)})
	}
	indexSession(t, idx, events...)
}
