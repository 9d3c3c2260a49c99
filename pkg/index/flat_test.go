package index

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// stored pairs documents with their vectors, as the index hands them to a store.
func stored(docs []Document, vecs [][]float32) []StoredDoc {
	out := make([]StoredDoc, len(docs))
	for i := range docs {
		out[i] = StoredDoc{Document: docs[i], Vector: vecs[i]}
	}
	return out
}

func randomDocs(r *rand.Rand, n, dims int) ([]Document, [][]float32) {
	docs := make([]Document, n)
	vecs := make([][]float32, n)
	for i := range n {
		docs[i] = Document{SessionID: fmt.Sprint("s", i/50), EventID: fmt.Sprint("e", i), Text: fmt.Sprint("doc ", i), Timestamp: time.Unix(int64(i), 0)}
		vecs[i] = make([]float32, dims)
		for j := range vecs[i] {
			vecs[i][j] = float32(r.NormFloat64())
		}
	}
	return docs, vecs
}

// orderAfter is the order of results' IDs after rule, run on a copy.
func orderAfter(rule func([]SearchResult), results []SearchResult) []string {
	got := slices.Clone(results)
	rule(got)
	return ids(got)
}

func ids(rs []SearchResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.EventID)
	}
	return out
}

// exactTop is the best k documents by cosine similarity, computed the
// slow, plain way, in float64.
func exactTop(docs []Document, vecs [][]float32, q []float32, k int) []string {
	type hit struct {
		id    string
		score float64
	}
	var hits []hit
	for i, v := range vecs {
		var d, nv, nq float64
		for j := range v {
			d += float64(v[j]) * float64(q[j])
			nv += float64(v[j]) * float64(v[j])
			nq += float64(q[j]) * float64(q[j])
		}
		hits = append(hits, hit{docs[i].EventID, d / math.Sqrt(nv*nq)})
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	var out []string
	for _, h := range hits[:k] {
		out = append(out, h.id)
	}
	return out
}

// The flat store's search is exact: recall@10 against a plain float64
// search is 1, before and after a session is removed.
// Both in-process vector stores find exactly the nearest vectors, before
// and after a session's are removed, and after a snapshot is restored.
func TestVectorStoresAreExact(t *testing.T) {
	for _, store := range []vectorStore{flatStore{}, chromemStore{}} {
		t.Run(store.name(), func(t *testing.T) { testExact(t, store) })
	}
}

func testExact(t *testing.T, store vectorStore) {
	r := rand.New(rand.NewPCG(1, 2))
	docs, vecs := randomDocs(r, 2000, 64)
	shard, _ := store.newShard()
	ctx := context.Background()
	if err := shard.upsert(ctx, stored(docs, vecs)); err != nil {
		t.Fatal(err)
	}
	check := func(when string, docs []Document, vecs [][]float32) {
		for q := range 50 {
			_, query := randomDocs(r, 1, 64)
			got, err := shard.query(ctx, query[0], 10, Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if want := exactTop(docs, vecs, query[0], 10); !slices.Equal(ids(got), want) {
				t.Fatalf("%s, query %d: %s found %v, exact search %v", when, q, store.name(), ids(got), want)
			}
		}
	}
	check("after adding", docs, vecs)
	if err := shard.removeWhere(ctx, func(d *Document) bool { return d.SessionID == "s3" }); err != nil {
		t.Fatal(err)
	}
	var keptDocs []Document
	var keptVecs [][]float32
	for i, d := range docs {
		if d.SessionID != "s3" {
			keptDocs, keptVecs = append(keptDocs, d), append(keptVecs, vecs[i])
		}
	}
	check("after removing a session", keptDocs, keptVecs)
	for _, d := range docs {
		if shard.has(eventKey{d.SessionID, d.EventID}) != (d.SessionID != "s3") {
			t.Fatalf("after removing s3, has(%s/%s) = %v", d.SessionID, d.EventID, !(d.SessionID != "s3"))
		}
	}
	payload, err := shard.export()
	if err != nil {
		t.Fatal(err)
	}
	if shard, err = store.restore(payload); err != nil {
		t.Fatal(err)
	}
	if !shard.has(eventKey{keptDocs[0].SessionID, keptDocs[0].EventID}) {
		t.Error("a restored shard does not know it holds a document")
	}
	check("restored from a snapshot", keptDocs, keptVecs)
}

// BenchmarkVectorStores measures the in-process vector stores on one
// user's 10,000 vectors of 384 dimensions (search only, no embedding):
//
//	go test -run '^$' -bench VectorStores ./pkg/index
func BenchmarkVectorStores(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	docs, vecs := randomDocs(r, 10_000, 384)
	_, queries := randomDocs(r, 64, 384)
	for _, store := range []vectorStore{flatStore{}, chromemStore{}} {
		b.Run(store.name(), func(b *testing.B) {
			s, _ := store.newShard()
			if err := s.upsert(context.Background(), stored(docs, vecs)); err != nil {
				b.Fatal(err)
			}
			var durations []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := s.query(context.Background(), queries[i%len(queries)], 20, Filter{}); err != nil {
					b.Fatal(err)
				}
				durations = append(durations, time.Since(start))
				i++
			}
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// Vectors embedded in the background come with the document read again;
// the shard keeps one copy of its text, the keyword shard's.
func TestAShardKeepsATextOnce(t *testing.T) {
	sh := &memoryShard{keyword: newBM25Shard(), vector: &flatShard{byEvent: map[eventKey]int{}}}
	text := strings.Repeat("a long message about the garden ", 20)
	first := Document{SessionID: "s", EventID: "e1", Text: text}
	if err := sh.write(t.Context(), []StoredDoc{{Document: first, Terms: []string{"garden"}}}); err != nil {
		t.Fatal(err)
	}
	again := first
	again.Text = strings.Clone(text) // as decoded a second time
	other := Document{SessionID: "s", EventID: "e2", Text: "another"}
	if err := sh.write(t.Context(), []StoredDoc{{Document: again, Vector: []float32{1, 0}}, {Document: other, Vector: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	flat := sh.vector.(*flatShard)
	if unsafe.StringData(flat.docs[0].Text) != unsafe.StringData(sh.keyword.docs[0].Text) {
		t.Error("the vector shard keeps a copy of the text the keyword shard holds")
	}
	if flat.docs[1].Text != "another" {
		t.Errorf("a document the keyword shard lacks: %+v", flat.docs[1])
	}
}
