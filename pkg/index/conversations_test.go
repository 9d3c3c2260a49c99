package index_test

import (
	"testing"

	"github.com/hectormem/hector/internal/race"
	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/embed/use"
	"github.com/hectormem/hector/pkg/index"
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
	if race.Enabled {
		t.Skip("second pass: measured without the race detector, which slows the sentence encoder tenfold: scripts/test runs it in its second pass")
	}
	set := indextest.Conversations()
	t.Logf("%d pairs, %d turns, %d questions", len(set.Owners), set.Turns(), len(set.Questions))
	words, err := glove.New()
	if err != nil {
		t.Fatal(err)
	}
	sentences, err := use.New()
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
		{"hybrid use", func() (*index.Index, error) { return index.NewHybrid(sentences, index.WithStemming(true)) }, 0.63},
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
	// Hybrid never does worse than keyword alone, with either built-in
	// embedder; with the default one (the sentence encoder) it is 15 points
	// of recall@5 above keyword overall, and 30 on paraphrases.
	kw := reports["keyword"]
	for _, name := range []string{"hybrid glove", "hybrid use"} {
		for _, c := range indextest.Categories {
			k, h := kw.ByCategory[c], reports[name].ByCategory[c]
			if h.Recall5 < k.Recall5 || h.Hit1 < k.Hit1 {
				t.Errorf("%s: %s does worse than keyword alone: %s against %s", c, name, h, k)
			}
		}
	}
	def := reports["hybrid use"]
	if def.All.Recall5 < kw.All.Recall5+0.15 || def.ByCategory["paraphrase"].Recall5 < kw.ByCategory["paraphrase"].Recall5+0.30 {
		t.Errorf("the default index (hybrid use): recall@5 %.3f overall, %.3f on paraphrases; want 0.15 and 0.30 above keyword's %.3f and %.3f",
			def.All.Recall5, def.ByCategory["paraphrase"].Recall5, kw.All.Recall5, kw.ByCategory["paraphrase"].Recall5)
	}
}
