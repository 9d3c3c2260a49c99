package index_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/embed/glove"
	"github.com/hectormem/hector/pkg/index/indextest"
)

// TestConversationRetrieval measures each kind of index on the conversation
// set, per category, and holds hybrid search with the built-in word vectors
// to doing at least as well as keyword search alone in every category.
//
//	go test -run TestConversationRetrieval -v ./pkg/index
//
// prints the figures.
func TestConversationRetrieval(t *testing.T) {
	set := indextest.Conversations()
	t.Logf("%d pairs, %d turns, %d questions", len(set.Owners), set.Turns(), len(set.Questions))
	words, err := glove.New()
	if err != nil {
		t.Fatal(err)
	}
	reports := map[string]indextest.Report{}
	for _, tc := range []struct {
		name  string
		idx   func() (*index.Index, error)
		floor float64 // recall@5 over every question
	}{
		{"keyword", func() (*index.Index, error) { return index.NewKeyword(index.WithStemming(true)) }, 0.43},
		{"hybrid hash", func() (*index.Index, error) { return index.NewHybrid(hashEmbedder(t, 0), index.WithStemming(true)) }, 0.43},
		{"vector glove", func() (*index.Index, error) { return index.NewVector(words) }, 0.44},
		{"hybrid glove", func() (*index.Index, error) { return index.NewHybrid(words, index.WithStemming(true)) }, 0.54},
	} {
		idx, err := tc.idx()
		if err != nil {
			t.Fatal(err)
		}
		rep := indextest.MeasureConversations(t, idx, set)
		reports[tc.name] = rep
		t.Logf("%-13s all          %s", tc.name, rep.All)
		for _, c := range indextest.Categories {
			t.Logf("%-13s %-12s %s", tc.name, c, rep.ByCategory[c])
		}
		if rep.All.Recall5 < tc.floor {
			t.Errorf("%s: recall@5 %.3f, below its floor of %.2f", tc.name, rep.All.Recall5, tc.floor)
		}
	}
	for _, c := range indextest.Categories {
		kw, hy := reports["keyword"].ByCategory[c], reports["hybrid glove"].ByCategory[c]
		if hy.Recall5 < kw.Recall5 || hy.Hit1 < kw.Hit1 {
			t.Errorf("%s: hybrid (glove) does worse than keyword alone: %s against %s", c, hy, kw)
		}
	}
}

// The set is what the figures claim: 20 long multi-session conversations
// between two named people, over 3,000 turns, over 400 questions in every
// category, each answered by turns that are in its owner's conversation.
func TestConversationSetShape(t *testing.T) {
	set := indextest.Conversations()
	if len(set.Owners) < 20 || set.Turns() < 3000 || len(set.Questions) < 400 {
		t.Fatalf("%d conversations, %d turns, %d questions", len(set.Owners), set.Turns(), len(set.Questions))
	}
	keys := map[string]string{} // evidence key -> owner
	for _, o := range set.Owners {
		authors := map[string]bool{}
		for _, sess := range o.Sessions {
			for _, turn := range sess {
				authors[turn.Author] = true
				if turn.Key != "" {
					keys[turn.Key] = o.UserID
				}
			}
		}
		if len(o.Sessions) < 5 || len(authors) != 2 {
			t.Errorf("%s: %d sessions between %d people", o.UserID, len(o.Sessions), len(authors))
		}
	}
	perCategory := map[string]int{}
	for _, q := range set.Questions {
		perCategory[q.Category]++
		for _, k := range q.Evidence {
			if keys[k] != q.UserID {
				t.Fatalf("%q: evidence %s is not in %s's conversation", q.Text, k, q.UserID)
			}
		}
	}
	for _, c := range indextest.Categories {
		if perCategory[c] < 40 {
			t.Errorf("%d %s questions", perCategory[c], c)
		}
	}
}
