package index

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/session"
)

// refusingEmbedder answers as an embedding API may: it refuses a whole
// batch when one of its texts is over its input limit (here: holds "TOO
// LONG"), and fails on everything while it is down.
type refusingEmbedder struct {
	embed.Embedder
	down   atomic.Bool
	probed chan struct{} // told when it is asked for one text while down
}

func newRefusingEmbedder(t *testing.T) *refusingEmbedder {
	hash, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	return &refusingEmbedder{Embedder: hash, probed: make(chan struct{}, 100)}
}

func (e *refusingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.down.Load() {
		if len(texts) == 1 {
			select {
			case e.probed <- struct{}{}:
			default:
			}
		}
		return nil, errors.New("dial tcp: connection refused")
	}
	for _, t := range texts {
		if strings.Contains(t, "TOO LONG") {
			return nil, &embed.APIError{Provider: "test", Status: 400, Message: "input is too long"}
		}
	}
	return e.Embedder.Embed(ctx, texts)
}

var discardLogs = WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// A text the embedder refuses while it embeds others does not hold back
// the vectors of every later change: it is indexed by its words alone,
// recorded as skipped, and the others get their vectors.
func TestTheLaneGoesPastATextTheEmbedderRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sessions := session.NewInMemoryService()
	e := newRefusingEmbedder(t)
	idx := openBackground(t, sessions, e, 100, discardLogs)
	defer idx.Close()
	s := newSession(t, sessions, "s")
	for _, text := range []string{"we booked a zeppelin ride", "TOO LONG: the zeppelin manual", "the zeppelin lands at noon"} {
		appendTurn(t, ctx, sessions, s, text)
	}
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatalf("vectors did not get past the refused text: %v", err)
	}
	found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Results) != 3 {
		t.Fatalf("found %d results, want all three by their words", len(found.Results))
	}
	for _, r := range found.Results {
		_, hasVector := r.Signals[string(KindVector)]
		if refused := strings.HasPrefix(r.Content, "TOO LONG"); hasVector == refused {
			t.Errorf("%q: found by its vector %v", r.Content, hasVector)
		}
	}
	skips := idx.Skipped()
	if skips.Total != 1 || len(skips.Recent) != 1 || !strings.Contains(skips.Recent[0].Error, "input is too long") {
		t.Errorf("skipped %+v, want the refused text's event", skips)
	}
}

// An embedder that is down refuses every text, the probe too: nothing is
// skipped, the vectors wait, and they are written once it is back.
func TestTheLaneWaitsForAnEmbedderThatIsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sessions := session.NewInMemoryService()
	e := newRefusingEmbedder(t)
	idx := openBackground(t, sessions, e, 100, discardLogs)
	defer idx.Close()
	e.down.Store(true)
	s := newSession(t, sessions, "s")
	appendTurn(t, ctx, sessions, s, "we booked a zeppelin ride")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatalf("an append with the embedder down: %v", err)
	}
	select { // the lane tried a text alone, or the probe
	case <-e.probed:
	case <-ctx.Done():
		t.Fatal("the lane never tried to embed")
	}
	if skips := idx.Skipped(); skips.Total != 0 {
		t.Errorf("skipped %+v with the embedder down, want nothing", skips)
	}
	terms, _ := idx.Cursor(ctx)
	if vectors, _, _ := idx.VectorCursor(ctx); vectors >= terms {
		t.Errorf("vectors at %d with the embedder down, terms at %d: want them behind", vectors, terms)
	}
	e.down.Store(false)
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if signals := signalsOf(t, idx, "zeppelin", "s"); signals[string(KindVector)].Rank == 0 {
		t.Errorf("signals %v once the embedder is back, want a vector", signals)
	}
	if skips := idx.Skipped(); skips.Total != 0 {
		t.Errorf("skipped %+v, want nothing", skips)
	}
}

// A vector index embeds as it writes: a text the embedder refuses is left
// out, recorded as skipped, and the others are indexed.
func TestAVectorIndexLeavesOutATextTheEmbedderRefuses(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	idx, err := NewVector(newRefusingEmbedder(t), WithSessions(sessions), discardLogs)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	s := newSession(t, sessions, "s")
	for _, text := range []string{"we booked a zeppelin ride", "TOO LONG: the zeppelin manual", "the zeppelin lands at noon"} {
		appendTurn(t, ctx, sessions, s, text)
	}
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Results) != 2 {
		t.Errorf("found %d results, want the two texts the embedder took", len(found.Results))
	}
	if skips := idx.Skipped(); skips.Total != 1 {
		t.Errorf("skipped %+v, want the refused text's event", skips)
	}
}
