package qdrant_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/hectormem/hector/internal/fakeqdrant"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/qdrant"
	"github.com/hectormem/hector/pkg/session"
)

var collections atomic.Int64

// stores makes stores on the Qdrant at host:port, each on a collection no
// other test uses (or the test's shared one), dropped when the test ends.
func stores(host string, port int) indextest.StoreFactory {
	return func(t testing.TB, shared string) index.Store {
		name := fmt.Sprintf("hector_test_%d_%d", os.Getpid(), collections.Add(1))
		if shared != "" {
			name = fmt.Sprintf("hector_test_%d_%08x", os.Getpid(), crc32.ChecksumIEEE([]byte(t.Name()+"/"+shared)))
		}
		s, err := qdrant.New(qdrant.Config{Host: host, Port: port, Collection: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Drop(context.Background()); s.Close() })
		return s
	}
}

func TestStore(t *testing.T) {
	fake := fakeqdrant.Start(t)
	indextest.RunStore(t, stores(fake.Host, fake.Port), "keyword", "vector", "hybrid")
}

// Forgetting a user leaves no point of theirs in the fake's collections,
// read directly, and every other point as it was.
func TestErasure(t *testing.T) {
	for _, kind := range []index.Kind{"keyword", "hybrid"} {
		t.Run(string(kind), func(t *testing.T) {
			fake := fakeqdrant.Start(t)
			indextest.RunErasure(t, stores(fake.Host, fake.Port)(t, ""), kind, func(testing.TB) []string { return fake.Dump() })
		})
	}
}

// TestRealQdrant runs the same against a real Qdrant (1.16 or later) when
// HECTOR_TEST_QDRANT_ADDR (host:gRPC port, such as localhost:6334) is set.
func TestRealQdrant(t *testing.T) {
	indextest.RunStore(t, realQdrant(t), "keyword", "vector", "hybrid")
}

// What goes over the wire: every filtered request names the owner's key;
// the owner is the tenant field; keyword search is sparse with the IDF
// modifier; a hybrid search is one request per signal, which Hector fuses.
func TestRequests(t *testing.T) {
	fake := fakeqdrant.Start(t)
	store := stores(fake.Host, fake.Port)(t, "")
	sessions := session.NewInMemoryService()
	idx := indextest.External(t, "hybrid", store, 64, index.WithSessions(sessions))
	for _, user := range []string{"alice", "bob"} {
		resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "shared words "+user)}); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "shared words", AppName: "app", UserID: "alice"})
	if err != nil || len(rs.Results) != 1 || rs.Results[0].SessionID != "alice-s" || len(rs.Results[0].Signals) != 2 {
		t.Fatalf("alice's search = %+v, %v; want her event, found by both signals", rs, err)
	}
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "bob", SessionID: "bob-s"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CatchUp(t.Context(), sessions); err != nil { // the deletion, from the change feed
		t.Fatal(err)
	}
	if err := idx.Rebuild(t.Context(), sessions, "app", "alice"); err != nil {
		t.Fatal(err)
	}

	requests := fake.Requests()
	methods := map[string]int{}
	for _, r := range requests {
		methods[r.Method]++
		for _, keys := range r.Filters {
			if !slices.Contains(keys, "owner") {
				t.Errorf("a %s request filtered on %q only", r.Method, keys)
			}
		}
	}
	for _, m := range []string{"Query", "Scroll", "Delete"} {
		if methods[m] == 0 {
			t.Errorf("no %s request was made; the test does not cover it (%v)", m, methods)
		}
	}
	// The one search was two requests, one per signal, each filtered once.
	var queries []fakeqdrant.Request
	for _, r := range requests {
		if r.Method == "Query" {
			queries = append(queries, r)
		}
	}
	if len(queries) != 2 || len(queries[0].Filters) != 1 || len(queries[1].Filters) != 1 {
		t.Errorf("hybrid search requests: %+v, want one per signal", queries)
	}

	name := store.(*qdrant.Store).Name()
	coll := name[strings.LastIndex(name, " ")+1:]
	owner := fake.FieldIndex(coll, "owner")
	if owner == nil || !owner.GetFieldIndexParams().GetKeywordIndexParams().GetIsTenant() {
		t.Errorf("the owner's payload index = %v, want a keyword index marked is_tenant", owner)
	}
	if n := fake.Points(coll); n != 1 {
		t.Errorf("%d points after deleting bob's session, want alice's 1", n)
	}
}

// The collection's sparse vector has Qdrant weigh terms by IDF, and
// keyword results rank as BM25 would: a rare term outweighs a common one.
func TestKeywordRanksByIDF(t *testing.T) {
	fake := fakeqdrant.Start(t)
	store := stores(fake.Host, fake.Port)(t, "")
	idx := indextest.External(t, "keyword", store, 0)
	sessions := session.NewInMemoryService()
	texts := []string{"weather report for monday", "weather report for tuesday", "weather report for sunday", "weather looks fine", "zebras seen in the garden"}
	for i, text := range texts {
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: fmt.Sprint("s", i)})
		if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	got, err := idx.Search(t.Context(), &index.SearchRequest{Query: "weather zebras", AppName: "app", UserID: "u"})
	if err != nil || len(got.Results) != 5 || got.Results[0].Content != "zebras seen in the garden" {
		t.Fatalf("search = %+v, %v; want all five, the zebras first", got, err)
	}
	if got.Results[1].Content != "weather looks fine" {
		t.Errorf("second = %q, want the shortest weather message", got.Results[1].Content)
	}
}

// A store that goes away mid-run fails calls with ErrStoreUnavailable and
// serves again when it returns.
func TestOutage(t *testing.T) {
	fake := fakeqdrant.Start(t)
	idx := indextest.External(t, "keyword", stores(fake.Host, fake.Port)(t, ""), 0)
	if err := idx.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	fake.SetDown(true)
	if err := idx.Ready(t.Context()); err == nil {
		t.Error("Ready while Qdrant is down: nil")
	}
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "a", UserID: "u"}); err == nil || !strings.Contains(err.Error(), "qdrant at 127.0.0.1") {
		t.Errorf("Search while Qdrant is down = %v, want an error naming the store", err)
	}
	fake.SetDown(false)
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "a", UserID: "u"}); err != nil {
		t.Errorf("Search once Qdrant is back: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	s, err := qdrant.New(qdrant.Config{Host: "127.0.0.1", Port: 1, Collection: "nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	indextest.Unreachable(t, s, "qdrant at 127.0.0.1:1")
}

// A collection that an older Hector made (vectors only, under the
// configured name itself) is refused until a rebuild replaces it.
func TestOlderCollectionIsReplacedByARebuild(t *testing.T) {
	fake := fakeqdrant.Start(t)
	client, err := qc.NewClient(&qc.Config{Host: fake.Host, Port: fake.Port, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	err = client.CreateCollection(t.Context(), &qc.CreateCollection{CollectionName: "old_memory",
		VectorsConfig: qc.NewVectorsConfigMap(map[string]*qc.VectorParams{"v": {Size: 64, Distance: qc.Distance_Cosine}})})
	if err != nil {
		t.Fatal(err)
	}
	s, err := qdrant.New(qdrant.Config{Host: fake.Host, Port: fake.Port, Collection: "old_memory"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	idx := indextest.External(t, "vector", s, 64, quiet)
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "a", UserID: "u"}); !errors.Is(err, index.ErrNeedsRebuild) {
		t.Fatalf("Search on an older collection = %v, want ErrNeedsRebuild", err)
	}
	if err := idx.Rebuild(t.Context(), session.NewInMemoryService(), "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "a", UserID: "u"}); err != nil {
		t.Errorf("Search after the rebuild: %v", err)
	}
	if got := fake.Collections(); !slices.Equal(got, []string{"old_memory_g1"}) {
		t.Errorf("collections after the rebuild: %q, want only the new generation", got)
	}
}

// A collection made before searches were filtered by author, role and
// time has payload indexes for the owner and session only. Qdrant in
// strict mode refuses a filter on a field with no index (the fake does
// too): opening such a collection adds the indexes, and filtered searches
// work without a rebuild.
func TestOlderCollectionGetsTheFilterIndexes(t *testing.T) {
	fake := fakeqdrant.Start(t)
	client, err := qc.NewClient(&qc.Config{Host: fake.Host, Port: fake.Port, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := t.Context()
	err = client.CreateCollection(ctx, &qc.CreateCollection{CollectionName: "memory_g1",
		SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{"terms": {Modifier: qc.Modifier_Idf.Enum()}}),
		Metadata:            qc.NewValueMap(map[string]any{"hector_fingerprint": "hector keyword stemmed"})})
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"owner", "session"} {
		if _, err := client.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{CollectionName: "memory_g1", FieldName: field,
			FieldType: qc.FieldType_FieldTypeKeyword.Enum(), Wait: ptr(true)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.CreateAlias(ctx, "memory", "memory_g1"); err != nil {
		t.Fatal(err)
	}
	s, err := qdrant.New(qdrant.Config{Host: fake.Host, Port: fake.Port, Collection: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions := session.NewInMemoryService()
	idx := indextest.External(t, "keyword", s, 0)
	resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"Caroline", "Melanie"} {
		if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: who, Message: session.NewTextMessage(session.RoleUser, "the garden")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Index(ctx, resp.Session); err != nil {
		t.Fatal(err)
	}
	since := resp.Session.Events().At(0).Timestamp.Add(-time.Hour)
	got, err := idx.Search(ctx, &index.SearchRequest{Query: "garden", AppName: "app", UserID: "u",
		Filter: index.Filter{Author: "Melanie", Role: session.RoleUser, After: since}})
	if err != nil || len(got.Results) != 1 || got.Results[0].Author != "Melanie" {
		t.Fatalf("a filtered search on an older collection = %+v, %v; want Melanie's event", got, err)
	}
	for _, field := range []string{"author", "role", "time"} {
		if fake.FieldIndex("memory_g1", field) == nil {
			t.Errorf("no payload index on %q", field)
		}
	}
	if ix := fake.FieldIndex("memory_g1", "time"); ix != nil && ix.GetFieldType() != qc.FieldType_FieldTypeDatetime {
		t.Errorf("the time field's index is %v, want datetime", ix.GetFieldType())
	}
}

func ptr[T any](v T) *T { return &v }

func TestBadConfig(t *testing.T) {
	for _, cfg := range []qdrant.Config{{Port: 70000}, {Collection: "has space"}, {Collection: "a/b"}} {
		if _, err := qdrant.New(cfg); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}
