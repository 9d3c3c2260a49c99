package index_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
)

func TestKeywordOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestVectorOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewVector(hashEmbedder(t, 0), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestHybridOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewHybrid(hashEmbedder(t, 0), append([]index.Option{index.WithStemming(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}
