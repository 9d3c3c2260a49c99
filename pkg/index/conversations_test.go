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
// set, per category, and holds hybrid search to doing at least as well as
// keyword search alone in every category, and meaning to finding the
// paraphrases words cannot. The set is Hector's own: it tests behaviour,
// and chooses no default nor weight (hector eval on public benchmarks
// does).
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
		name string
		idx  func() (*index.Index, error)
	}{
		{"keyword", func() (*index.Index, error) { return index.NewKeyword(index.WithStemming(true)) }},
		{"hybrid hash", func() (*index.Index, error) { return index.NewHybrid(hashEmbedder(t, 0), index.WithStemming(true)) }},
		{"vector glove", func() (*index.Index, error) { return index.NewVector(words) }},
		{"hybrid glove", func() (*index.Index, error) { return index.NewHybrid(words, index.WithStemming(true)) }},
		{"hybrid use", func() (*index.Index, error) { return index.NewHybrid(sentences, index.WithStemming(true)) }},
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
	}
	// Hybrid does not do worse than keyword alone with a model of meaning
	// (by more than one question in a hundred), and meaning finds a share of the paraphrases, which share no word with
	// their question.
	kw := reports["keyword"]
	for _, name := range []string{"hybrid glove", "hybrid use"} {
		for _, c := range indextest.Categories {
			k, h := kw.ByCategory[c], reports[name].ByCategory[c]
			if h.Recall5 < k.Recall5-0.01 || h.Hit1 < k.Hit1-0.01 {
				t.Errorf("%s: %s does worse than keyword alone: %s against %s", c, name, h, k)
			}
		}
	}
	for _, name := range []string{"vector glove"} {
		if got, words := reports[name].ByCategory["paraphrase"].Recall5, kw.ByCategory["paraphrase"].Recall5; got < words+0.1 {
			t.Errorf("%s finds %.3f of the paraphrases in its first 5, keyword %.3f: meaning should find more", name, got, words)
		}
	}
}
