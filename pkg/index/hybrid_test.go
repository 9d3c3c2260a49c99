package index

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/session"
)

// fuse reads the lists it is given and writes only its own results: the
// lists' results keep their scores and the caller's metadata as they were,
// and each fused result says which signal found it, at which rank and
// score.
func TestFuseLeavesItsInputsAlone(t *testing.T) {
	shared := map[string]any{"tag": "the caller's"}
	keyword := []SearchResult{{SessionID: "s", EventID: "a", Score: 3, Metadata: shared}, {SessionID: "s", EventID: "b", Score: 2}}
	vector := []SearchResult{{SessionID: "s", EventID: "b", Score: 0.9}, {SessionID: "s", EventID: "c", Score: 0.5, Metadata: shared}}
	out := fuse(keyword, vector, func(SearchResult) float64 { return 1 }, Fusion{DefaultVectorWeight, 0}, 10)
	if len(out) != 3 || out[0].EventID != "b" {
		t.Fatalf("fused %+v, want b (found by both) first of three", out)
	}
	if len(shared) != 1 || keyword[1].Signals != nil || vector[0].Signals != nil || keyword[0].Score != 3 {
		t.Errorf("fuse changed its inputs: %v %+v %+v", shared, keyword, vector)
	}
	if s := out[0].Signals; s["keyword"] != (Signal{Rank: 2, Score: 2}) || s["vector"] != (Signal{Rank: 1, Score: 0.9}) {
		t.Errorf("b's signals %+v, want keyword rank 2 (score 2) and vector rank 1 (score 0.9)", s)
	}
	for _, r := range out {
		if r.EventID != "b" && len(r.Signals) != 1 {
			t.Errorf("%s's signals %+v, want the one that found it", r.EventID, r.Signals)
		}
	}
}

// A keyword result that holds the whole query outweighs the vector's
// best; one that holds only a name, common to many of a person's turns,
// gives way to the vector's.
func TestFuseWeighsKeywordsByCoverage(t *testing.T) {
	vector := []SearchResult{{SessionID: "s", EventID: "meaning", Score: 0.8}, {SessionID: "s", EventID: "words", Score: 0.4}}
	full := []SearchResult{{SessionID: "s", EventID: "words", Score: 9}, {SessionID: "s", EventID: "meaning", Score: 1}}
	coverage := map[string]float64{"words": 1, "meaning": 0.25}
	out := fuse(full, vector, func(r SearchResult) float64 { return coverage[r.EventID] }, Fusion{DefaultVectorWeight, 0}, 2)
	if out[0].EventID != "words" {
		t.Errorf("a keyword result holding every query term came after %q", out[0].EventID)
	}
	nameOnly := []SearchResult{{SessionID: "s", EventID: "chatter", Score: 2}, {SessionID: "s", EventID: "small talk", Score: 2}}
	coverage = map[string]float64{"chatter": 0.34, "small talk": 0.34}
	out = fuse(nameOnly, vector, func(r SearchResult) float64 { return coverage[r.EventID] }, Fusion{DefaultVectorWeight, 0}, 3)
	if out[0].EventID != "meaning" {
		t.Errorf("keyword results holding only a name ranked %q over the vector's best", out[0].EventID)
	}
}

// A fused score reads as a share: 1 for a result that is the best keyword
// match, holds every query term and is the query's own meaning, 0 for
// none of that. A result the encoder scored under the model's floor gets
// nothing of its words (they are shared by chance) and comes after every
// other, in the encoder's order; one the encoder did not score keeps what
// its words give.
func TestFuseScoresReadAsSharesAndPutUnrelatedNeighboursLast(t *testing.T) {
	keyword := []SearchResult{{SessionID: "s", EventID: "exact", Score: 7}, {SessionID: "s", EventID: "unscored", Score: 3.5},
		{SessionID: "s", EventID: "by chance", Score: 3.5}}
	vector := []SearchResult{{SessionID: "s", EventID: "exact", Score: 1}, {SessionID: "s", EventID: "near", Score: 0.6},
		{SessionID: "s", EventID: "chatter", Score: 0.15}, {SessionID: "s", EventID: "by chance", Score: 0.1}}
	out := fuse(keyword, vector, func(SearchResult) float64 { return 1 }, Fusion{DefaultVectorWeight, 0.2}, 10)
	var order []string
	got := map[string]float64{}
	for _, r := range out {
		order = append(order, r.EventID)
		got[r.EventID] = r.Score
	}
	want := map[string]float64{
		"exact":     1,                                          // best words, every term, same meaning
		"unscored":  (1 - DefaultVectorWeight) * math.Sqrt(0.5), // half the best keyword score (its root counts); no similarity to judge it by
		"near":      DefaultVectorWeight * (0.6 - 0.2) / 0.8,    // meaning only, above the floor
		"chatter":   underFloor * 0.15,                          // under the floor 0.2: last, in the encoder's order
		"by chance": underFloor * 0.1,                           // its words count for nothing
	}
	if !slices.Equal(order, []string{"exact", "unscored", "near", "chatter", "by chance"}) {
		t.Errorf("fused in the order %v; want exact, unscored, near, then under the floor chatter (0.15) and by chance (0.1)", order)
	}
	for id, w := range want {
		if math.Abs(got[id]-w) > 1e-12 {
			t.Errorf("%s scored %.4g, want %.4g", id, got[id], w)
		}
	}
	if _, ok := out[4].Signals[string(KindKeyword)]; ok {
		t.Errorf("a keyword match under the floor kept its keyword signal: %+v", out[4])
	}
	// A query no word and no close meaning answers finds the nearest
	// chatter, scored next to nothing.
	chatter := fuse(nil, vector[2:], func(SearchResult) float64 { return 1 }, Fusion{DefaultVectorWeight, 0.2}, 10)
	if len(chatter) != 2 || chatter[0].EventID != "chatter" || chatter[0].Score > underFloor {
		t.Errorf("a query no word and no close meaning answers found %+v; want the two under the floor, each scored under %g", chatter, underFloor)
	}
}

// FuzzCoverageIsTheShareOfQueryTermsHeld holds coverage, which stems only
// the words that can become a query term, to its definition on Tokens.
func FuzzCoverageIsTheShareOfQueryTermsHeld(f *testing.F) {
	f.Add("where did Caroline go running?", "Caroline", "I went running in the park; Caroline ran too.")
	f.Add("東京 trip 2024", "", "Our trip to 東京 in 2024 was great")
	f.Fuzz(func(t *testing.T, query, author, text string) {
		x := &Index{tok: Tokenizer{Stem: true}}
		terms := unique(x.tok.Tokens(query))
		d := Document{Author: author, Text: text}
		held := 0
		for _, q := range terms {
			if slices.Contains(x.tok.Tokens(d.searchedText()), q) {
				held++
			}
		}
		want := 0.0
		if len(terms) > 0 {
			want = float64(held) / float64(len(terms))
		}
		if got := x.coverage(terms)(SearchResult{Author: author, Content: text}); got != want {
			t.Fatalf("coverage of %q in %q by %q = %v, want %v", query, text, author, got, want)
		}
	})
}

// BenchmarkCoverage is what fusion spends reading the words of a hybrid
// search's keyword candidates where the store does not count their terms
// (the engines'): LongMemEval asks for 100 results, so 400 candidates,
// many of them long assistant answers.
func BenchmarkCoverage(b *testing.B) {
	words := strings.Fields(`sure here are some ideas for planning your trip to the coast including places
		to stay local restaurants hiking trails and museums you might enjoy the weather in spring is usually
		mild so pack layers and comfortable shoes I recommend booking early because hotels fill up quickly
		during festivals Many travelers also rent bikes or take the ferry between islands 2024 budget tips`)
	r := rand.New(rand.NewPCG(1, 2))
	candidates := make([]SearchResult, 400)
	for i := range candidates {
		text := make([]string, 250)
		for j := range text {
			text[j] = words[r.IntN(len(words))]
		}
		candidates[i] = SearchResult{Author: "assistant", Role: "assistant", Content: strings.Join(text, " ") + "."}
	}
	x := &Index{tok: Tokenizer{Stem: true}}
	terms := x.tok.Tokens("What did you recommend for hiking trails near the islands in spring?")
	for b.Loop() {
		coverage := x.coverage(terms)
		for _, c := range candidates {
			coverage(c)
		}
	}
}

// The stores here count the query terms each keyword result holds, from
// the words they indexed, and coverage takes that count rather than read
// the result's words again (what a LongMemEval search spent a third of its
// time on): the count must be what reading the words gives, for every
// result, on disk and in memory, with and without a filter, for text
// flushed to the file and text still in memory.
func TestStoresCountTheTermsCoverageWouldRead(t *testing.T) {
	words := strings.Fields(`run running ran runner runs trip trips tripped Caroline caroline park parks the a of
		plan planning planned 東京 naïve café 2024 user_id dying lies happily generously Melanie`)
	authors := []string{"", "Caroline", "Melanie", "user", "assistant"}
	for name, file := range map[string]bool{"on disk": true, "in memory": false} {
		t.Run(name, func(t *testing.T) {
			opts := []Option{WithStemming(true), WithLogger(slog.New(slog.DiscardHandler))}
			if file {
				opts = append(opts, WithFile(filepath.Join(t.TempDir(), "index.db")))
			}
			x, err := NewKeyword(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			r := rand.New(rand.NewPCG(7, 8))
			sentence := func(n int) string {
				s := make([]string, 1+r.IntN(n))
				for i := range s {
					s[i] = words[r.IntN(len(words))]
				}
				return strings.Join(s, " ")
			}
			sessions := session.NewInMemoryService()
			for i := range 4 {
				created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: fmt.Sprint("s", i)})
				if err != nil {
					t.Fatal(err)
				}
				for range 40 {
					author := authors[r.IntN(len(authors))]
					if err := sessions.AppendEvent(t.Context(), created.Session, &session.Event{Author: author, Message: session.NewTextMessage(session.RoleUser, sentence(12))}); err != nil {
						t.Fatal(err)
					}
				}
				if err := x.Index(t.Context(), created.Session); err != nil {
					t.Fatal(err)
				}
				if store, ok := x.store.(*diskStore); ok && i == 1 {
					if err := store.db.flush(t.Context()); err != nil { // two sessions in the file, two in memory
						t.Fatal(err)
					}
				}
			}
			checked := 0
			for range 200 {
				terms := unique(x.tok.Tokens(sentence(5)))
				f := Filter{}
				if r.IntN(2) == 0 {
					f.SessionID = "s2"
				}
				results, err := x.store.Search(t.Context(), Owner{"app", "u"}, StoreQuery{Terms: terms, Limit: 1000, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				coverage := x.coverage(terms)
				for _, res := range results {
					if res.terms == 0 {
						t.Fatalf("%v: the store counted no term of a result it found by them: %+v", terms, res)
					}
					read := res
					read.terms = 0
					if got, want := coverage(res), coverage(read); got != want {
						t.Fatalf("%v in %q by %q: the store's count gives coverage %v, its words %v", terms, res.Content, res.Author, got, want)
					}
					checked++
				}
			}
			if checked < 1000 {
				t.Fatalf("only %d results checked", checked)
			}
		})
	}
}
