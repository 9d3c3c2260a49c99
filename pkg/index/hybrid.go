package index

import (
	"context"
	"fmt"

	"github.com/hectormem/hector/pkg/index/embed"
)

// RRFK is reciprocal rank fusion's constant (Cormack et al.): a result's
// fused score is the sum over the lists that found it of 1/(RRFK + rank),
// ranks counted from 1.
const RRFK = 60

// NewHybrid returns a hybrid index (KindHybrid): keyword and vector
// candidates fused by reciprocal rank fusion. Each result's metadata says
// which signals found it and at which rank.
func NewHybrid(e embed.Embedder, opts ...Option) (*Index, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: a hybrid index needs an embedder", ErrInvalidArgument)
	}
	o := newOptions(opts)
	return newIndex(KindHybrid, &hybridEngine{keyword: keywordEngine{Tokenizer{Stem: o.stem}}, vector: newVectorEngine(e, o)}, o)
}

type hybridEngine struct {
	keyword keywordEngine
	vector  *vectorEngine
}

type hybridShard struct{ keyword, vector shard }

func (e *hybridEngine) fingerprint() string { return "hybrid " + e.vector.fingerprint() }

func (e *hybridEngine) newShard(o owner) (shard, error) {
	kw, _ := e.keyword.newShard(o)
	vec, err := e.vector.newShard(o)
	if err != nil {
		return nil, err
	}
	return &hybridShard{kw, vec}, nil
}

func (e *hybridEngine) dropShard(s shard) { e.vector.dropShard(s.(*hybridShard).vector) }

type hybridSnapshot struct{ Keyword, Vector []byte }

func (e *hybridEngine) snapshot(shards map[owner]shard) ([]byte, error) {
	kw, vec := map[owner]shard{}, map[owner]shard{}
	for o, s := range shards {
		kw[o], vec[o] = s.(*hybridShard).keyword, s.(*hybridShard).vector
	}
	var snap hybridSnapshot
	var err error
	if snap.Keyword, err = e.keyword.snapshot(kw); err != nil {
		return nil, err
	}
	if snap.Vector, err = e.vector.snapshot(vec); err != nil {
		return nil, err
	}
	return gobBytes(snap)
}

func (e *hybridEngine) restore(payload []byte) (map[owner]shard, error) {
	var snap hybridSnapshot
	if err := fromGob(payload, &snap); err != nil {
		return nil, err
	}
	kw, err := e.keyword.restore(snap.Keyword)
	if err != nil {
		return nil, err
	}
	vec, err := e.vector.restore(snap.Vector)
	if err != nil {
		return nil, err
	}
	shards := map[owner]shard{}
	for o, k := range kw {
		v := vec[o]
		if v == nil {
			return nil, fmt.Errorf("index: the snapshot has keyword entries but no vectors for an owner")
		}
		shards[o] = &hybridShard{k, v}
	}
	return shards, nil
}

func (s *hybridShard) add(ctx context.Context, docs []Document) error {
	if err := s.vector.add(ctx, docs); err != nil { // the one that can fail (embedding) goes first
		return err
	}
	return s.keyword.add(ctx, docs)
}

func (s *hybridShard) removeSession(ctx context.Context, sessionID string) error {
	if err := s.keyword.removeSession(ctx, sessionID); err != nil {
		return err
	}
	return s.vector.removeSession(ctx, sessionID)
}

func (s *hybridShard) search(ctx context.Context, query string, limit int) ([]SearchResult, error) {
	candidates := hybridCandidates(limit)
	lists := map[string][]SearchResult{}
	var err error
	if lists[string(KindKeyword)], err = s.keyword.search(ctx, query, candidates); err != nil {
		return nil, err
	}
	if lists[string(KindVector)], err = s.vector.search(ctx, query, candidates); err != nil {
		return nil, err
	}
	return fuse(lists, limit), nil
}

// hybridCandidates is how many results of each signal fusion looks at:
// more than the top few of each list.
func hybridCandidates(limit int) int { return max(4*limit, 40) }

// fuse merges ranked lists by reciprocal rank fusion. Each result's
// metadata says which lists found it and at which rank (1 = best).
func fuse(lists map[string][]SearchResult, limit int) []SearchResult {
	fused := map[eventKey]*SearchResult{}
	for signal, results := range lists {
		for rank, r := range results {
			key := eventKey{r.SessionID, r.EventID}
			own := Signal{Rank: rank + 1, Score: r.Score}
			f := fused[key]
			if f == nil {
				f = &r // a copy: the lists are the stores'
				f.Score, f.Signals = 0, map[string]Signal{}
				fused[key] = f
			}
			f.Score += 1 / float64(RRFK+rank+1)
			f.Signals[signal] = own
		}
	}
	out := make([]SearchResult, 0, len(fused))
	for _, f := range fused {
		out = append(out, *f)
	}
	sortResults(out)
	return out[:min(limit, len(out))]
}
