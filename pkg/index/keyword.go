package index

import (
	"context"
)

// NewKeyword returns a BM25 keyword index (KindKeyword), held in memory,
// one shard per (app, user) so a search never scans another user's entries.
// Persist it with WithSnapshot; stem English with WithStemming.
func NewKeyword(opts ...Option) (*Index, error) {
	o := newOptions(opts)
	return newIndex(KindKeyword, keywordEngine{Tokenizer{Stem: o.stem}}, o)
}

type keywordEngine struct{ tok Tokenizer }

func (e keywordEngine) newShard(owner) (shard, error) { return newBM25Shard(e.tok), nil }
func (keywordEngine) dropShard(shard)                 {}

// The snapshot holds documents, which are tokenized again when loaded, so
// tokenizer settings may change between runs without a rebuild.
func (keywordEngine) fingerprint() string { return string(KindKeyword) }

type ownerDocs struct {
	App, User string
	Docs      []Document
}

func (keywordEngine) snapshot(shards map[owner]shard) ([]byte, error) {
	var all []ownerDocs
	for o, sh := range shards {
		all = append(all, ownerDocs{o.app, o.user, sh.(*bm25Shard).documents()})
	}
	return gobBytes(all)
}

func (e keywordEngine) restore(payload []byte) (map[owner]shard, error) {
	var all []ownerDocs
	if err := fromGob(payload, &all); err != nil {
		return nil, err
	}
	shards := map[owner]shard{}
	for _, od := range all {
		sh := newBM25Shard(e.tok)
		if err := sh.add(context.Background(), od.Docs); err != nil {
			return nil, err
		}
		shards[owner{od.App, od.User}] = sh
	}
	return shards, nil
}
