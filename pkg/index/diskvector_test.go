package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// A vector kept in int8 gives every cosine within 0.003 of float32's, for
// vectors shaped like the built-in encoders': on LoCoMo's turns their
// largest value is about 4 times the typical one (e5, minilm and glove
// alike), and their cosines moved by at most 0.0025, 0.0005 on average.
// A vector with nothing to scale by comes back as zeros.
func TestInt8VectorsKeepTheirCosines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dims = 384
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		if r.IntN(4) == 0 { // one value 5 times the typical one
			v[r.IntN(dims)] = 5
		}
		unit(v, v)
		return v
	}
	docs := make([][]float32, 500)
	kept := make([][]byte, len(docs))
	for i := range docs {
		docs[i] = vec()
		if kept[i] = encodeVector(docs[i]); len(kept[i]) != 4+dims {
			t.Fatalf("a vector of %d values takes %d bytes, want %d", dims, len(kept[i]), 4+dims)
		}
	}
	var worst float64
	for range 50 {
		q := vec()
		for i := range docs {
			got, ok := similarity(q, kept[i])
			if !ok {
				t.Fatalf("a vector of %d values is not one of %d", dims, dims)
			}
			worst = max(worst, math.Abs(float64(dot(q, docs[i])-got)))
		}
	}
	t.Logf("largest change of a cosine: %.5f", worst)
	if worst > 0.003 {
		t.Errorf("a cosine moved by %.5f in int8, want at most 0.003", worst)
	}
	for _, v := range [][]float32{make([]float32, dims), {float32(math.NaN()), 1}, {float32(math.Inf(1)), 0}} {
		ones := make([]float32, len(v))
		for i := range ones {
			ones[i] = 1
		}
		if got, ok := similarity(ones, encodeVector(v)); !ok || got != 0 {
			t.Errorf("%v compares as %v, want 0", v, got)
		}
	}
}

// A file written before vectors were kept in int8 holds them in float32:
// its documents are still found, by their exact cosines, beside new ones.
func TestAFileWithFloat32VectorsStillSearches(t *testing.T) {
	ctx := t.Context()
	store := openVectorFile(t, 3)
	o := Owner{"app", "u"}
	write := func(event string, v []float32) {
		t.Helper()
		if err := store.Write(ctx, o, []StoredDoc{{Document: Document{SessionID: "s", EventID: event, Text: event}, Vector: v}}); err != nil {
			t.Fatal(err)
		}
		if err := store.db.flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write("old", []float32{1, 0, 0})
	// As a file of the layout before int8 keeps it: four bytes a value.
	old := make([]byte, 12)
	binary.LittleEndian.PutUint32(old, math.Float32bits(1))
	if _, err := store.db.write.ExecContext(ctx, `UPDATE vectors SET vec = ?`, old); err != nil {
		t.Fatal(err)
	}
	write("new", []float32{0.6, 0.8, 0})
	rs, err := store.Search(ctx, o, StoreQuery{Vector: []float32{1, 0, 0}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].EventID != "old" || rs[0].Score != 1 || rs[1].EventID != "new" || math.Abs(rs[1].Score-0.6) > 0.003 {
		t.Fatalf("found %+v; want old at exactly 1, then new at 0.6", rs)
	}
}

// openVectorFile opens an index file of vectors of dims values, closed
// when the test ends.
func openVectorFile(t *testing.T, dims int) *diskStore {
	t.Helper()
	store := newDiskStore(filepath.Join(t.TempDir(), "index.db"), quiet)
	if err := store.Open(t.Context(), Schema{Fingerprint: "test", Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
