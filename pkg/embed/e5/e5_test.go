package e5

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/embedtest"
	"github.com/hectormem/hector/pkg/embed/internal/bert"
)

// reference is testdata/reference.json: each text's pieces and vector as
// a passage, and its vector as a query.
type reference struct {
	embedtest.Reference
	queries [][]float64
}

func readReference(t *testing.T) reference {
	ref := reference{Reference: embedtest.ReadReference(t, Fingerprint, "scripts/models/convert-e5")}
	if len(ref.Texts) < 20 {
		t.Fatalf("the reference has %d texts, want at least 20", len(ref.Texts))
	}
	var queries struct {
		Texts []struct {
			QueryVector []float64 `json:"query_vector"`
		}
	}
	embedtest.ReadJSON(t, "testdata/reference.json", &queries)
	for _, q := range queries.Texts {
		ref.queries = append(ref.queries, q.QueryVector)
	}
	return ref
}

// The tokenizer cuts every reference text, marked as a passage, into the
// pieces the original (the jar's tokenizer.json, with Hugging Face's
// tokenizers) does: accents, other scripts, CJK, emoji, control
// characters, words over 100 characters, a text past the window.
func TestPiecesMatchTheOriginal(t *testing.T) {
	m, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readReference(t).Texts {
		if got := m.Pieces(passageMark + r.Text); !slices.Equal(got, r.Pieces) {
			t.Errorf("%.60q: pieces %v, want %v", r.Text, got, r.Pieces)
		}
	}
}

// Each reference text's vectors as a passage (Embed) and as a query
// (EmbedQueries), computed by onnxruntime from the jar's float32 ONNX
// file, are matched to cosine 0.999 in float32 from the int8-stored
// weights, and to 0.99 where the dense layers multiply in int8 (on AVX2,
// and on AVX-512 VNNI where the processor has it): every kernel path this
// machine has, the portable one included (scripts/test runs the suite
// again with HECTOR_KERNELS=portable).
func TestVectorsMatchTheOriginal(t *testing.T) {
	ref := readReference(t)
	embedtest.OnEveryKernel(t, load, func(t *testing.T, m *bert.Model, minimum float64) {
		e := &Embedder{m}
		embedtest.VectorsMatch(t, e, ref.Reference, minimum)
		for i, r := range ref.Texts {
			got, err := e.EmbedQueries(t.Context(), []string{r.Text})
			if err != nil {
				t.Fatal(err)
			}
			if c := embedtest.Cosine(got[0], ref.queries[i]); !(c >= minimum) {
				t.Errorf("%.60q as a query: cosine %.6f to the original's vector, want ≥ %g", r.Text, c, minimum)
			}
		}
	})
}

// A query and a passage of the same words are embedded differently, as
// the model was trained, and embed.Queries finds the query's way.
func TestQueriesAreMarked(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	asText, err := e.Embed(t.Context(), []string{"Where do I keep my old sneakers?"})
	if err != nil {
		t.Fatal(err)
	}
	asQuery, err := embed.Queries(t.Context(), e, []string{"Where do I keep my old sneakers?"})
	if err != nil {
		t.Fatal(err)
	}
	if c := embed.Cosine(asText[0], asQuery[0]); c > 0.99 {
		t.Errorf("the same words as a passage and as a query: cosine %.4f, want them told apart", c)
	}
}

// Texts embedded together come out as they do alone.
func TestBatchesMatchSingles(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.BatchesMatchSingles(t, e, readReference(t).Reference)
}

// A question is nearer the text that answers it than to one that does not.
func TestNearInMeaning(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.Near(t, e, []embedtest.Pair{
		{Text: "Do you remember my pets?", Near: "My dog Rex loves the park", Far: "Book a flight to Berlin"},
		{Text: "What does Anna do for a living?", Near: "Anna works as a nurse at the hospital", Far: "Anna bought a red bicycle"},
		{Text: "Where do I keep my old sneakers?", Near: "I keep my old sneakers under my bed", Far: "I bought new running shoes"},
	})
}

// BenchmarkEmbed: texts per second on one core.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/embed/e5
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	embedtest.Bench(b, e, func(s string) int { return len(e.m.Pieces(passageMark + s)) }, 16)
}

var _ embed.Asymmetric = (*Embedder)(nil)

// Searches arriving faster than the cores encode run one pass a core at
// a time, each holding its activations: the rest wait, holding none.
func TestPassesRunAtMostOneACore(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := e.EmbedQueries(t.Context(), []string{fmt.Sprintf("what did I say about the garden on day %d", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most, cores := e.m.MostPassesAtOnce(), runtime.GOMAXPROCS(0); most < 1 || most > cores {
		t.Errorf("%d passes ran at once on %d cores", most, cores)
	}
}
