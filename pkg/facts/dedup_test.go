package facts

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/hectormem/hector/internal/race"
	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/use"
)

type dedupPair struct {
	same bool
	a, b string
}

func dedupSet(t *testing.T) []dedupPair {
	f, err := os.Open("testdata/dedup.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pairs []dedupPair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			p := strings.Split(line, "\t")
			pairs = append(pairs, dedupPair{p[0] == "same", p[1], p[2]})
		}
	}
	return pairs
}

// The merge decisions on Hector's set of 50 pairs of phrasings of one fact
// and 50 near-misses: no near-miss is merged (precision 1), by the words
// alone or with the built-in sentence encoder's cosine; the recall of each
// is reported, and held to what it reached when the rules were chosen.
func TestDeterministicDedup(t *testing.T) {
	pairs := dedupSet(t)
	if len(pairs) < 100 {
		t.Fatalf("%d pairs, want at least 100", len(pairs))
	}
	measure := func(name string, cos func(i int) (float64, bool), minRecall float64) {
		var merged, right, same int
		for i, p := range pairs {
			c, have := cos(i)
			got := sameFact(phrase(p.a), phrase(p.b), c, have)
			if got != sameFact(phrase(p.b), phrase(p.a), c, have) {
				t.Errorf("%s: the decision on %q and %q depends on their order", name, p.a, p.b)
			}
			if p.same {
				same++
			}
			if got {
				merged++
				if p.same {
					right++
				} else {
					t.Errorf("%s: merged the near-miss %q and %q", name, p.a, p.b)
				}
			}
		}
		precision, recall := float64(right)/float64(max(merged, 1)), float64(right)/float64(same)
		t.Logf("%s: %d merged, precision %.2f, recall %.2f", name, merged, precision, recall)
		if recall < minRecall {
			t.Errorf("%s: recall %.2f, below %.2f", name, recall, minRecall)
		}
	}
	measure("words alone", func(int) (float64, bool) { return 0, false }, 0.06)
	if race.Enabled {
		t.Skip("second pass: the sentence encoder is measured without the race detector, which slows it tenfold")
	}
	e, err := use.New()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range pairs {
		texts = append(texts, p.a, p.b)
	}
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	measure("with the sentence encoder", func(i int) (float64, bool) { return embed.Cosine(vecs[2*i], vecs[2*i+1]), true }, 0.26)
}

// FuzzPhrase: any text phrases without a panic, a fact is the same as
// itself when it says anything, and the decision does not depend on the
// order of the two texts.
func FuzzPhrase(f *testing.F) {
	for _, p := range [][2]string{{"Doesn't drink alcohol", "Does not drink alcohol"}, {"Owes Tom 50 euros", "Tom owes her 50 euros"},
		{"", "\x00\xff"}, {"Ça va, Zoë? 9:30-10:00", "eu-west-1 -- :"}} {
		f.Add(p[0], p[1], 0.9)
	}
	f.Fuzz(func(t *testing.T, a, b string, cos float64) {
		pa, pb := phrase(a), phrase(b)
		if len(pa.content) >= minStatement && !sameFact(pa, pa, 0, false) {
			t.Errorf("%q is not the same as itself", a)
		}
		if sameFact(pa, pb, cos, true) != sameFact(pb, pa, cos, true) {
			t.Errorf("the decision on %q and %q depends on their order", a, b)
		}
		ca, ea := pa.signatures([]byte("k"))
		cb, eb := phrase(a).signatures([]byte("k"))
		if ca != cb || ea != eb {
			t.Errorf("the signatures of %q change from one phrasing to the next", a)
		}
	})
}
