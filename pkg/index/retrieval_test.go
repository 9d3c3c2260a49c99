package index_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
)

// TestRetrievalQuality measures recall@5 and MRR on the retrieval corpus
// for each index type, and holds each to a floor so a regression fails.
// go test -run TestRetrievalQuality -v ./pkg/index prints the figures.
func TestRetrievalQuality(t *testing.T) {
	keyword, _ := index.NewKeyword(index.WithStemming(true))
	vector, _ := index.NewVector(hashEmbedder(t, 0))
	hybrid, _ := index.NewHybrid(hashEmbedder(t, 0), index.WithStemming(true))
	for _, tc := range []struct {
		idx   *index.Index
		floor indextest.Quality
	}{{keyword, indextest.Quality{Recall5: 0.9, MRR: 0.9}}, {vector, indextest.Quality{Recall5: 0.85, MRR: 0.85}}, {hybrid, indextest.Quality{Recall5: 0.9, MRR: 0.9}}} {
		q := indextest.Retrieval(t, tc.idx)
		t.Logf("%-8s %s", tc.idx.Name(), q)
		if q.Recall5 < tc.floor.Recall5 || q.MRR < tc.floor.MRR {
			t.Errorf("%s: %s; below the floor of %s", tc.idx.Name(), q, tc.floor)
		}
	}
}
