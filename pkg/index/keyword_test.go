package index_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
)

func TestKeyword(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestKeywordStemmed(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(append(opts, index.WithStemming(true))...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}
