package index_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
)

// TestRetrievalQuality measures recall@5 and MRR on the retrieval corpus
// for each index type, and holds each to a floor so a regression fails.
// go test -run TestRetrievalQuality -v ./pkg/index prints the figures.
func TestRetrievalQuality(t *testing.T) {
	words, err := glove.New()
	if err != nil {
		t.Fatal(err)
	}
	keyword, _ := index.NewKeyword(index.WithStemming(true))
	vector, _ := index.NewVector(hashEmbedder(t, 0))
	hybrid, _ := index.NewHybrid(hashEmbedder(t, 0), index.WithStemming(true))
	gloveVector, _ := index.NewVector(words)
	gloveHybrid, _ := index.NewHybrid(words, index.WithStemming(true))
	for _, tc := range []struct {
		name  string
		idx   *index.Index
		floor indextest.Quality
	}{
		{"keyword", keyword, indextest.Quality{Recall5: 0.9, MRR: 0.9}},
		{"vector (hash)", vector, indextest.Quality{Recall5: 0.85, MRR: 0.85}},
		{"hybrid (hash)", hybrid, indextest.Quality{Recall5: 0.9, MRR: 0.9}},
		{"vector (glove)", gloveVector, indextest.Quality{Recall5: 0.8, MRR: 0.8}},
		{"hybrid (glove)", gloveHybrid, indextest.Quality{Recall5: 0.9, MRR: 0.9}},
	} {
		q := indextest.Retrieval(t, tc.idx)
		t.Logf("%-15s %s", tc.name, q)
		if q.Recall5 < tc.floor.Recall5 || q.MRR < tc.floor.MRR {
			t.Errorf("%s: %s; below the floor of %s", tc.name, q, tc.floor)
		}
	}
}
