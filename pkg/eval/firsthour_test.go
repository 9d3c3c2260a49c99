package eval_test

import (
	"cmp"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/e5"
	"github.com/hectormem/hector/pkg/eval"
	"github.com/hectormem/hector/pkg/index"
)

// TestTheFirstHour asks the first-hour set (testdata/firsthour.jsonl: six
// users' everyday statements, and questions that share no content word
// with the turn that answers them) of the zero configuration, as a new
// user's first searches are asked. Its words find nothing, so what ranks
// is the encoder: the default must put the answer first about as often as
// the encoder does alone, scoring each turn's own text (within 5 points),
// and never rank a turn next to the answer above it where the encoder
// alone ranks it below: that is a turn's context stealing its neighbour's
// meaning.
func TestTheFirstHour(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds the set with the built-in encoder")
	}
	raw, err := os.ReadFile("testdata/firsthour.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	d, err := eval.LoadJSONL("firsthour.jsonl", raw)
	if err != nil {
		t.Fatal(err)
	}
	turns := map[string]map[string]eval.Turn{} // user → turn ID → turn
	order := map[string][]string{}             // user → turn IDs in order
	for _, u := range d.Users {
		turns[u.ID] = map[string]eval.Turn{}
		for _, s := range u.Sessions {
			for _, tr := range s.Turns {
				turns[u.ID][tr.ID] = tr
				order[u.ID] = append(order[u.ID], tr.ID)
			}
		}
	}
	if len(d.Users) < 6 || len(d.Questions) < 36 {
		t.Fatalf("the set has %d users and %d questions: at least 6 and 36 wanted", len(d.Users), len(d.Questions))
	}
	for _, q := range d.Questions {
		if shared := sharedWords(q.Text, turns[q.UserID][q.Turns[0]].Text); len(shared) > 0 {
			t.Errorf("question %s/%s shares %v with its answer: the set is for questions that share no content word", q.UserID, q.ID, shared)
		}
	}

	cfg := config.Zero(config.Overrides{DataDir: t.TempDir()})
	svcs, err := app.Open(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	if _, err := eval.Run(t.Context(), d, svcs.Sessions, svcs.Index, eval.Options{App: "firsthour"}); err != nil {
		t.Fatal(err)
	}
	encoder, err := e5.New()
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][][]float32{} // user → their turns' own vectors, in order
	for user, ids := range order {
		texts := make([]string, len(ids))
		for i, id := range ids {
			texts[i] = turns[user][id].Text
		}
		if own[user], err = encoder.Embed(t.Context(), texts); err != nil {
			t.Fatal(err)
		}
	}

	var hybridFirst, encoderFirst int
	for _, q := range d.Questions {
		answer := q.Turns[0]
		resp, err := svcs.Index.Search(t.Context(), &index.SearchRequest{Query: q.Text, AppName: "firsthour", UserID: q.UserID, Limit: 10, AskedAt: q.AskedAt})
		if err != nil {
			t.Fatal(err)
		}
		var ranked []string
		for _, r := range resp.Results {
			ranked = append(ranked, r.EventID)
		}
		alone := encoderRanking(t, encoder, q.Text, order[q.UserID], own[q.UserID])
		if len(ranked) > 0 && ranked[0] == answer {
			hybridFirst++
		}
		if alone[0] == answer {
			encoderFirst++
		}
		at := slices.Index(ranked, answer)
		if at < 0 {
			at = len(ranked)
		}
		ids := order[q.UserID]
		i := slices.Index(ids, answer)
		for _, n := range []int{i - 1, i + 1} {
			if n < 0 || n >= len(ids) {
				continue
			}
			// Above the answer by its own words (the encoder alone ranks it
			// so too) is the encoder's judgement; above it otherwise, it
			// borrowed the answer's meaning.
			if above := slices.Index(ranked[:at], ids[n]); above >= 0 && slices.Index(alone, ids[n]) > slices.Index(alone, answer) {
				t.Errorf("%s %q: the answer's neighbour %q ranks %d, above the answer %q (%d; the encoder alone ranks them %d and %d)",
					q.UserID, q.Text, turns[q.UserID][ids[n]].Text, above+1, turns[q.UserID][answer].Text, at+1,
					slices.Index(alone, ids[n])+1, slices.Index(alone, answer)+1)
			}
		}
		if len(ranked) == 0 || ranked[0] != answer {
			first := "nothing"
			if len(ranked) > 0 {
				first = turns[q.UserID][ranked[0]].Text
			}
			t.Logf("%s %q: default ranks %q first, the answer %d; the encoder alone ranks the answer %d", q.UserID, q.Text, first, at+1, slices.Index(alone, answer)+1)
		}
	}
	n := float64(len(d.Questions))
	hybrid, alone := float64(hybridFirst)/n, float64(encoderFirst)/n
	t.Logf("hit@1 over %d questions: default %.3f, the encoder alone %.3f", len(d.Questions), hybrid, alone)
	if hybrid < alone-0.05 {
		t.Errorf("the default puts the answer first for %.3f of the questions, the encoder alone for %.3f: more than 5 points apart", hybrid, alone)
	}
}

// encoderRanking ranks a user's turns (ids, with vecs their own texts'
// vectors) by their similarity to the question, as the encoder alone
// would: the reference the default is held to.
func encoderRanking(t *testing.T, e embed.Embedder, question string, ids []string, vecs [][]float32) []string {
	t.Helper()
	qv, err := embed.Queries(t.Context(), e, []string{question})
	if err != nil {
		t.Fatal(err)
	}
	sim := map[string]float64{}
	for i, id := range ids {
		sim[id] = embed.Cosine(qv[0], vecs[i])
	}
	ranked := slices.Clone(ids)
	slices.SortStableFunc(ranked, func(a, b string) int { return cmp.Compare(sim[b], sim[a]) })
	return ranked
}

// sharedWords are the content words two texts share, a word counting as
// another when they begin with the same five letters ("married",
// "marriage").
func sharedWords(a, b string) []string {
	key := func(w string) string { return w[:min(len(w), 5)] }
	in := map[string]bool{}
	for _, w := range contentWords(b) {
		in[key(w)] = true
	}
	var shared []string
	for _, w := range contentWords(a) {
		if in[key(w)] {
			shared = append(shared, w)
		}
	}
	return shared
}

func contentWords(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		w = strings.TrimSuffix(strings.Trim(w, "'"), "'s")
		if w != "" && !functionWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// functionWords carry no content: pronouns, articles, auxiliaries,
// prepositions, question words.
var functionWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the i i'm i've me my mine we we're our us you your he his she her it its they their
		them who whom whose what which when where why how is am are was were be been being do does did done have has had
		having will would can can't could should shall may might must to of in on at by for from with about as into onto
		over under after before since until up down out off and or but so if then than that this these those there here
		any some all every no not just still also again too very much many more most own same such only`) {
		functionWords[w] = true
	}
}
