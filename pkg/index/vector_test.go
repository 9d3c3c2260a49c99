package index_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
)

var quietLogs = index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func hashEmbedder(t testing.TB, dims int) *embed.Hash {
	h, err := embed.NewHash(dims)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVector(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewVector(hashEmbedder(t, 0), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

// The built-in word vectors pass the suite as any embedder must.
func TestHybridGlove(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		e, err := glove.New()
		if err != nil {
			t.Fatal(err)
		}
		idx, err := index.NewHybrid(e, append([]index.Option{index.WithStemming(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestVectorChromem(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewVector(hashEmbedder(t, 0), append([]index.Option{index.WithChromem()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestHybridChromem(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewHybrid(hashEmbedder(t, 0), append([]index.Option{index.WithChromem(), index.WithStemming(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts map[string]int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	for _, t := range texts {
		c.texts[t]++
	}
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

func TestVectorIndexEmbedsEachEventOnce(t *testing.T) {
	counter := &countingEmbedder{Embedder: hashEmbedder(t, 64), texts: map[string]int{}}
	idx, err := index.NewVector(counter)
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 100
	for i := range turns {
		for _, ev := range []*session.Event{
			{Author: "user", Message: session.NewTextMessage(session.RoleUser, "question "+strings.Repeat("q", i+1))},
			{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "answer "+strings.Repeat("a", i+1))},
		} {
			if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	if len(counter.texts) != 2*turns {
		t.Errorf("%d distinct texts embedded, want %d", len(counter.texts), 2*turns)
	}
	for text, n := range counter.texts {
		if n != 1 {
			t.Fatalf("%q embedded %d times over %d turns, want once", text, n, turns)
		}
	}
}

// saveHelloThere appends "hello there" to a new session of a/u, indexes it
// and closes the index, saving its snapshot.
func saveHelloThere(t *testing.T, idx *index.Index, sessions session.Service) {
	t.Helper()
	resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u"})
	sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "hello there")})
	if err := idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestVectorIndexRefusesAnotherEmbeddersSnapshot(t *testing.T) {
	for name, kept := range persisted {
		t.Run(name, func(t *testing.T) { testRefusesAnotherEmbeddersFile(t, kept) })
	}
}

// persisted are the ways an index in process is kept across a restart.
var persisted = map[string]func(path string) index.Option{"snapshot": index.WithSnapshot, "file": index.WithFile}

func testRefusesAnotherEmbeddersFile(t *testing.T, kept func(string) index.Option) {
	sessions := session.NewInMemoryService()
	path := t.TempDir() + "/vector"
	old, err := index.NewVector(hashEmbedder(t, 128), kept(path), quietLogs)
	if err != nil {
		t.Fatal(err)
	}
	saveHelloThere(t, old, sessions)

	changed, err := index.NewVector(hashEmbedder(t, 256), kept(path), quietLogs)
	if err != nil {
		t.Fatal(err)
	}
	_, err = changed.Search(t.Context(), &index.SearchRequest{Query: "hello", AppName: "a", UserID: "u"})
	if err == nil || !strings.Contains(err.Error(), "hector index rebuild") || !strings.Contains(err.Error(), "hash/v1/128") {
		t.Fatalf("search over another embedder's vectors: error %v, want one telling to rebuild", err)
	}
	if err := changed.Rebuild(t.Context(), sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	rs, err := changed.Search(t.Context(), &index.SearchRequest{Query: "hello", AppName: "a", UserID: "u"})
	if err != nil || len(rs.Results) != 1 {
		t.Errorf("after the rebuild: %v, %v", rs, err)
	}
}

// An index in process that follows the sessions builds itself again at
// start when its snapshot was made another way: the snapshot is only a copy.
func TestSnapshotMadeAnotherWayIsBuiltAgainFromTheSessions(t *testing.T) {
	for name, kept := range persisted {
		t.Run(name, func(t *testing.T) { testMadeAnotherWayIsBuiltAgain(t, kept) })
	}
}

func testMadeAnotherWayIsBuiltAgain(t *testing.T, kept func(string) index.Option) {
	sessions := session.NewInMemoryService()
	path := t.TempDir() + "/hybrid"
	old, err := index.NewHybrid(hashEmbedder(t, 128), kept(path), index.WithSessions(sessions), quietLogs)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	saveHelloThere(t, old, sessions)

	for i, background := range []bool{false, true} {
		opts := []index.Option{kept(path), index.WithSessions(sessions), quietLogs}
		if background {
			opts = append(opts, index.WithBackgroundVectors(0))
		}
		changed, err := index.NewHybrid(hashEmbedder(t, 256+8*i), opts...) // another embedder each time
		if err != nil {
			t.Fatal(err)
		}
		if err := changed.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := changed.AwaitVectors(t.Context()); err != nil {
			t.Fatal(err)
		}
		rs, err := changed.Search(t.Context(), &index.SearchRequest{Query: "hello", AppName: "a", UserID: "u"})
		if err != nil || len(rs.Results) != 1 || rs.Results[0].Signals["vector"].Rank != 1 {
			t.Errorf("background %v: after starting on another embedder's snapshot: %+v, %v; want the event, by both signals", background, rs, err)
		}
		if err := changed.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHybrid(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewHybrid(hashEmbedder(t, 0), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

// tuned is an embedder whose model gives its own fusion weight and floor.
type tuned struct {
	*embed.Hash
	weight, floor float64
}

func (e tuned) VectorWeight() float64    { return e.weight }
func (e tuned) SimilarityFloor() float64 { return e.floor }

// searchDeployments indexes texts of one user's session in an unstemmed
// hybrid index and searches it for "deploy Konflux". Unstemmed,
// "deployment" shares no word with "deploy": the vector side alone finds it.
func searchDeployments(t *testing.T, texts []string, opts ...index.Option) *index.SearchResponse {
	return searchDeploymentsWith(t, hashEmbedder(t, 0), texts, opts...)
}

func searchDeploymentsWith(t *testing.T, e embed.Embedder, texts []string, opts ...index.Option) *index.SearchResponse {
	t.Helper()
	idx, err := index.NewHybrid(e, append(opts, index.WithStemming(false))...)
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	for _, text := range texts { // each in a session of its own: its score is fusion's alone (see creditSessions)
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u"})
		sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)})
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "deploy Konflux", AppName: "a", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestHybridSaysWhichSignalsFoundEachResult(t *testing.T) {
	rs := searchDeployments(t, []string{"deploy the service with Konflux", "deployment pipelines are slow", "lunch at noon"})
	if len(rs.Results) == 0 || rs.Results[0].Content != "deploy the service with Konflux" {
		t.Fatalf("results = %+v", rs.Results)
	}
	if s := rs.Results[0].Signals; s["keyword"].Rank != 1 || s["vector"].Rank != 1 || s["keyword"].Score <= 0 || s["vector"].Score <= 0 {
		t.Errorf("top result's signals = %+v, want keyword rank 1 and vector rank 1, with their scores", s)
	}
	// "deployment" shares no keyword with the query, only word pieces: found by the vector side alone.
	found := false
	for _, r := range rs.Results[1:] {
		if r.Content == "deployment pipelines are slow" {
			found = true
			if s := r.Signals; s["keyword"].Rank != 0 || s["vector"].Rank == 0 {
				t.Errorf("signals for the trigram-only match = %+v", s)
			}
		}
	}
	if !found {
		t.Errorf("the word-piece match is missing from %+v", rs.Results)
	}
}

func TestWithFusionWeighsTheSignals(t *testing.T) {
	search := func(f index.Fusion) []index.SearchResult {
		t.Helper()
		return searchDeployments(t, []string{"deploy the service with Konflux", "deployment pipelines are slow"}, index.WithFusion(f)).Results
	}
	vectorOnly := func(rs []index.SearchResult) *index.SearchResult {
		for i := range rs {
			if rs[i].Content == "deployment pipelines are slow" {
				return &rs[i]
			}
		}
		return nil
	}
	// All to the vector: the score is the similarity above the floor, scaled.
	r := vectorOnly(search(index.Fusion{VectorWeight: 1, SimilarityFloor: 0.1}))
	if r == nil {
		t.Fatal("the vector-only match is missing")
	}
	if want := (r.Signals["vector"].Score - 0.1) / 0.9; math.Abs(r.Score-want) > 1e-9 {
		t.Errorf("score with all weight on the vector = %v, want %v", r.Score, want)
	}
	// None to the vector: it is still a candidate, worth nothing.
	if r := vectorOnly(search(index.Fusion{VectorWeight: 0, SimilarityFloor: 0.1})); r == nil || r.Score != 0 {
		t.Errorf("vector-only match with no weight on the vector = %+v, want a score of 0", r)
	}
	// Under the floor it comes last, scored next to nothing.
	under := search(index.Fusion{VectorWeight: 0.5, SimilarityFloor: 0.99})
	if r := vectorOnly(under); r == nil || r != &under[len(under)-1] || r.Score <= 0 || r.Score > 1e-6 {
		t.Errorf("vector-only match under the floor = %+v of %d, want it last, scored above 0 and at most a millionth", r, len(under))
	}
	// An embedder that gives its own weight and floor is fused with them,
	// remembered or not, unless WithFusion says otherwise.
	own := tuned{hashEmbedder(t, 0), 1, 0.1}
	for _, e := range []embed.Embedder{own, embed.Memo(own, 8)} {
		r := vectorOnly(searchDeploymentsWith(t, e, []string{"deploy the service with Konflux", "deployment pipelines are slow"}).Results)
		if r == nil || math.Abs(r.Score-(r.Signals["vector"].Score-0.1)/0.9) > 1e-9 {
			t.Errorf("%T: vector-only match = %+v, want the score of all weight on the vector, floor 0.1", e, r)
		}
		r = vectorOnly(searchDeploymentsWith(t, e, []string{"deploy the service with Konflux", "deployment pipelines are slow"},
			index.WithFusion(index.Fusion{VectorWeight: 0, SimilarityFloor: 0.1})).Results)
		if r == nil || r.Score != 0 {
			t.Errorf("%T under WithFusion(weight 0): vector-only match = %+v, want a score of 0", e, r)
		}
	}
	for _, f := range []index.Fusion{{VectorWeight: -0.1}, {VectorWeight: 1.5}, {VectorWeight: math.NaN()}, {VectorWeight: 0.4, SimilarityFloor: 1}, {SimilarityFloor: -2}} {
		if _, err := index.NewHybrid(hashEmbedder(t, 0), index.WithFusion(f)); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("WithFusion(%+v): err = %v, want ErrInvalidArgument", f, err)
		}
	}
}

// A vector search's scores are similarities: a short question among its
// results gives its reply half of what its similarity exceeds the
// embedder's floor (see creditReplies), so that what is left to the
// question, half of similarity plus floor, is what was given plus floor.
func TestVectorSearchCreditsRepliesFromTheFloor(t *testing.T) {
	for _, floor := range []float64{0, 0.2} {
		idx, err := index.NewVector(tuned{hashEmbedder(t, 0), 1, floor})
		if err != nil {
			t.Fatal(err)
		}
		sessions := session.NewInMemoryService()
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u"})
		for _, text := range []string{"Where do we deploy Konflux?", "On the staging cluster, every Friday."} {
			sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)})
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
		rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "where to deploy Konflux", AppName: "a", UserID: "u"})
		if err != nil || len(rs.Results) != 2 {
			t.Fatalf("floor %v: %+v, %v; want both turns", floor, rs, err)
		}
		question, reply := rs.Results[0], rs.Results[1]
		if question.Seq > reply.Seq {
			question, reply = reply, question
		}
		given := reply.Signals[index.SignalReply].Score
		if question.Score <= floor || math.Abs(given-(question.Score-floor)) > 1e-9 {
			t.Errorf("floor %v: the question kept %v and gave %v, want it to give what it kept less the floor", floor, question.Score, given)
		}
	}
}
