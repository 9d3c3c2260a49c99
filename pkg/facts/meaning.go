package facts

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/embed"
)

// meaning is value's vector, nil when the service has no embedder.
func (s *Service) meaning(ctx context.Context, value string) ([]float32, error) {
	if s.embedder == nil {
		return nil, nil
	}
	vecs, err := s.embedder.Embed(ctx, []string{value})
	if err != nil {
		return nil, fmt.Errorf("facts: embedding the value: %w", err)
	}
	return vecs[0], nil
}

// sealVector seals a fact's vector as its value is sealed: a vector says
// much of what its text says.
func (s *Service) sealVector(vec []float32, scope Scope, key string) []byte {
	if vec == nil {
		return nil
	}
	raw := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return s.sealer.seal(string(raw), scope.String()+"\x00"+key+"\x00vector")
}

// vectorOf is a stored version's vector: opened, or, for a version written
// before it had one, embedded now. Nil without an embedder.
func (s *Service) vectorOf(ctx context.Context, r record, value string) ([]float32, error) {
	if s.embedder == nil {
		return nil, nil
	}
	if r.Vector == nil {
		return s.meaning(ctx, value)
	}
	raw, err := s.sealer.open(r.Vector, r.Scope.String()+"\x00"+r.Key+"\x00vector")
	if err != nil {
		return nil, fmt.Errorf("facts: fact %q's vector: %w", r.Key, err)
	}
	vec := make([]float32, len(raw)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32([]byte(raw[4*i:])))
	}
	if len(vec) != s.embedder.Dimensions() { // written with another embedder
		return s.meaning(ctx, value)
	}
	return vec, nil
}

// sameFactAs returns the scope's current fact that a new value repeats in
// other words, if any: among those with the same signatures, one that
// sameFact takes for the same, by its words, or with the cosine of the
// value's vector vec (nil without an embedder).
func (s *Service) sameFactAs(ctx context.Context, scope Scope, said phrasing, vec []float32, contentSig, entitySig string, now time.Time) (*record, error) {
	candidates, err := s.st.similar(ctx, scope, contentSig, entitySig, now)
	if err != nil {
		return nil, err
	}
	for _, c := range candidates {
		f, err := s.fact(c)
		if err != nil {
			return nil, err
		}
		other := phrase(f.Value)
		if sameFact(said, other, 0, false) {
			return &c, nil
		}
		if vec == nil {
			continue
		}
		theirs, err := s.vectorOf(ctx, c, f.Value)
		if err != nil {
			return nil, err
		}
		if sameFact(said, other, embed.Cosine(vec, theirs), true) {
			return &c, nil
		}
	}
	return nil, nil
}

// Match is a fact a search found, with how well it matches the query.
type Match struct {
	Fact
	Score float64 `json:"score"`
}

// minMatchCosine is how near in meaning a fact must be to a query that
// shares none of its words to be found: the sentence encoder puts
// unrelated short texts around 0.1 to 0.3 apart.
const minMatchCosine = 0.35

// Search finds the scope's current facts (those that held at asOf, when it
// is not zero) that match query, best first, at most limit. A fact's score
// is the mean of the share of the query's words its key and value hold and,
// with an embedder, the cosine of its value's vector and the query's; it is
// found by a word, or by a cosine of at least minMatchCosine.
func (s *Service) Search(ctx context.Context, scope Scope, query string, limit int, asOf time.Time) ([]Match, error) {
	if err := scope.check(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" || limit <= 0 {
		return nil, nil
	}
	asked := phrase(query).content
	var held []Fact
	var recs []record
	var err error
	if asOf.IsZero() {
		recs, err = s.st.list(ctx, scope, "", "", s.now().UTC())
	} else {
		recs, err = s.st.listAt(ctx, scope, "", "", asOf)
		now := s.now().UTC()
		recs = slices.DeleteFunc(recs, func(r record) bool { return !r.ExpiresAt.After(now) })
	}
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 { // nothing to embed the query for
		return nil, nil
	}
	if held, err = s.facts(recs); err != nil {
		return nil, err
	}
	qvec, err := s.meaning(ctx, query)
	if err != nil {
		return nil, err
	}
	var out []Match
	for i, f := range held {
		words := phrase(strings.ReplaceAll(f.Key, "/", " ") + " " + f.Value).content
		coverage := 0.0
		if len(asked) > 0 {
			n := 0
			for _, w := range asked {
				if slices.Contains(words, w) {
					n++
				}
			}
			coverage = float64(n) / float64(len(asked))
		}
		near := 0.0
		if qvec != nil {
			vec, err := s.vectorOf(ctx, recs[i], f.Value)
			if err != nil {
				return nil, err
			}
			near = embed.Cosine(qvec, vec)
		}
		if coverage == 0 && near < minMatchCosine {
			continue
		}
		score := coverage
		if qvec != nil {
			score = (coverage + near) / 2
		}
		out = append(out, Match{Fact: f, Score: score})
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), b.ValidFrom.Compare(a.ValidFrom))
	})
	return out[:min(limit, len(out))], nil
}
