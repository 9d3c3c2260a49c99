package facts

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hectormem/hector/pkg/embed/use"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// BenchmarkConsolidation: the cost of storing one fact under a new key in
// a scope that holds n facts already, consolidation included (finding the
// facts it may repeat, and comparing with them), by words alone and with
// the sentence encoder, in memory and in SQLite.
//
//	go test -run '^$' -bench Consolidation -benchtime 200x ./pkg/facts
func BenchmarkConsolidation(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		for _, backend := range []string{"memory", "sqlite"} {
			for _, meaning := range []bool{false, true} {
				name := fmt.Sprintf("facts=%d/%s/words", n, backend)
				if meaning {
					name = fmt.Sprintf("facts=%d/%s/encoder", n, backend)
				}
				b.Run(name, func(b *testing.B) { benchConsolidation(b, n, backend, meaning) })
			}
		}
	}
}

func benchConsolidation(b *testing.B, n int, backend string, meaning bool) {
	key := make([]byte, 32)
	policy := DefaultPolicy()
	policy.MaxScopeChars = 1 << 30
	opts := []Option{WithPolicy(policy)}
	if meaning {
		e, err := use.New()
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, WithEmbedder(e))
	}
	var svc *Service
	var err error
	if backend == "memory" {
		svc, err = NewInMemoryService(key, opts...)
	} else {
		svc, err = NewSQL(b.Context(), sqldbtest.SQLite(b), key, opts...)
	}
	if err != nil {
		b.Fatal(err)
	}
	scope := UserScope("app", "alice")
	now := time.Now().UTC()
	// Filled through the storage: through Store, each write would first
	// check the budget over all the facts before it.
	for i := range n {
		value := fmt.Sprintf("Has a pet named Pet%d who likes walks", i)
		r := record{ID: uuid.NewString(), Scope: scope, Key: fmt.Sprintf("pets/%d", i), Category: DefaultCategory, ValueChars: len(value),
			Sealed: svc.sealer.seal(value, scope.String()+"\x00"+fmt.Sprintf("pets/%d", i)), Source: Source{Kind: SourceWritten, By: "sdk"},
			CreatedAt: now, ValidFrom: now, ExpiresAt: now.Add(24 * time.Hour)}
		r.ContentSig, r.EntitySig = phrase(value).signatures(svc.sigKey)
		if err := svc.st.replace(b.Context(), nil, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		// Names Pet<i> as a held fact does: a candidate, compared by meaning.
		value := fmt.Sprintf("Pet%d is a pet of hers that enjoys walks", i)
		if _, err := svc.Store(b.Context(), scope, StoreRequest{Key: fmt.Sprintf("new/%d", i), Value: value}); err != nil {
			b.Fatal(err)
		}
	}
}
