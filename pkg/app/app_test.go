package app

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/internal/fakepinecone"
	"github.com/hectormem/hector/internal/fakeqdrant"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// An index in Qdrant is an external one: no index file, its place in the
// change feed in the sessions' database, appends found by a search.
func TestOpenQdrantIndex(t *testing.T) {
	fake := fakeqdrant.Start(t)
	dir := t.TempDir()
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf(`
server:
  data_dir: %s
  index:
    type: hybrid
    store: qdrant
    qdrant: {host: %s, port: %d}
`, dir, fake.Host, fake.Port)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(c.LocalState(), "the index file") {
		t.Errorf("an index in Qdrant keeps a snapshot: %v", c.LocalState())
	}
	if got := fmt.Sprint(c.Locations()); !strings.Contains(got, fmt.Sprintf("index hybrid (embedder e5-small, vectors in the background), in Qdrant at %s:%d collection hector_memory", fake.Host, fake.Port)) {
		t.Errorf("locations: %s", got)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := svcs.Index.(*index.Index); !ok {
		t.Fatalf("the index is a %T, want an external one", svcs.Index)
	}
	appendAndFind(t, svcs)
	if fake.Points("hector_memory") != 1 {
		t.Errorf("Qdrant holds %d points, want 1", fake.Points("hector_memory"))
	}
	if err := svcs.Index.CatchUp(t.Context(), svcs.Sessions); err != nil {
		t.Fatal(err)
	}
	cursor, err := svcs.Index.Cursor(t.Context())
	if err != nil || cursor == 0 {
		t.Fatalf("the feed cursor after catching up = %d, %v", cursor, err)
	}
	svcs.Close()
	again, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := again.Index.Cursor(t.Context()); err != nil || got != cursor {
		t.Errorf("the feed cursor after a restart = %d, %v; want %d, kept in the database", got, err, cursor)
	}
}

// A keyword index in the sessions' PostgreSQL database: made there on
// first start, found by a search right after an append.
func TestOpenPostgresIndex(t *testing.T) {
	dsn := sqldbtest.PostgresDSN(t)
	t.Setenv(facts.KeyEnv, strings.Repeat("ab", 32))
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf(`
server:
  data_dir: %s
  sessions: {backend: sql, database: pg}
  artifacts: {backend: sql, database: pg}
  index: {type: keyword, store: postgres}
databases:
  pg: {driver: postgres, dsn: %q}
`, t.TempDir(), dsn)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LocalState(); len(got) > 0 {
		t.Errorf("a replica on PostgreSQL keeps %v in its data directory", got)
	}
	if got := fmt.Sprint(c.Locations()); !strings.Contains(got, "index keyword, in the sessions' database, table hector_search") {
		t.Errorf("locations: %s", got)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	appendAndFind(t, svcs)
	db, _ := svcs.sqlDB(c, "pg")
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM hector_search").Scan(&n); err != nil || n != 1 {
		t.Errorf("hector_search holds %d rows (%v), want 1", n, err)
	}
}

// appendAndFind appends an event, indexes it as the server does after an
// append, and finds it.
func appendAndFind(t *testing.T, svcs *Services) {
	t.Helper()
	resp, err := svcs.Sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svcs.Sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the lighthouse keeper")}); err != nil {
		t.Fatal(err)
	}
	if err := svcs.Index.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	got, err := svcs.Index.Search(t.Context(), &index.SearchRequest{Query: "lighthouse", AppName: "app", UserID: "u"})
	if err != nil || len(got.Results) != 1 {
		t.Fatalf("search = %+v, %v", got, err)
	}
}

// A vector index in Pinecone, its place in the change feed in SQLite.
func TestOpenPineconeIndex(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	t.Setenv("HECTOR_TEST_PINECONE_KEY", fake.APIKey)
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf(`
server:
  data_dir: %s
  index:
    type: vector
    store: pinecone
    pinecone: {host: %q, api_key_env: HECTOR_TEST_PINECONE_KEY}
`, t.TempDir(), fake.URL)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.Locations()); !strings.Contains(got, "index vector (embedder e5-small), in Pinecone at "+fake.URL) || strings.Contains(got, fake.APIKey) {
		t.Errorf("locations: %s", got)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	appendAndFind(t, svcs)
	if ns := fake.Namespaces(); len(ns) != 2 {
		t.Errorf("Pinecone namespaces: %q, want the user's and the store's record", ns)
	}
}

// Facts in a server database are every replica's: a replica with no
// $HECTOR_FACTS_KEY refuses to start rather than write a key of its own
// into its data directory, which the others could not read.
func TestSharedFactsNeedTheSharedKey(t *testing.T) {
	dsn := sqldbtest.PostgresDSN(t)
	t.Setenv(facts.KeyEnv, "")
	dir := t.TempDir()
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: sql, database: pg}\ndatabases:\n  pg: {driver: postgres, dsn: %q}\n", dir, dsn)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		svcs.Close()
		t.Fatal("a replica with facts in PostgreSQL and no $HECTOR_FACTS_KEY started")
	}
	if !strings.Contains(err.Error(), "$HECTOR_FACTS_KEY") {
		t.Errorf("the refusal does not say what to set: %v", err)
	}
	if _, err := os.Stat(facts.KeyPath(dir)); err == nil {
		t.Error("the refused replica wrote a facts key into its data directory")
	}
}

// openWithIndex opens the application on dir with the given index
// section.
func openWithIndex(t *testing.T, dir, index string) *Services {
	t.Helper()
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf("server:\n  data_dir: %s\n  index: %s\n", dir, index)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svcs
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// store: chromem makes the in-process vector index keep its vectors in
// chromem-go, in a snapshot; reopened as the flat store the index is built
// again from the sessions into its file, and the snapshot, which nothing
// keeps up to date any more (an erasure included), is removed; and back.
func TestOpenChromemIndex(t *testing.T) {
	dir := t.TempDir()
	open := func(store string) *Services {
		t.Helper()
		return openWithIndex(t, dir, "{type: vector, embedder: glove, store: "+store+"}")
	}
	svcs := open("chromem")
	appendAndFind(t, svcs)
	if err := svcs.Close(); err != nil {
		t.Fatal(err)
	}
	snapshot, file := filepath.Join(dir, "index", "vector.snapshot"), filepath.Join(dir, "index", "vector.db")
	if !exists(snapshot) || exists(file) {
		t.Fatalf("chromem's index: snapshot kept %v, file kept %v; want the snapshot alone", exists(snapshot), exists(file))
	}
	flat := open("memory")
	found, err := flat.Index.Search(t.Context(), &index.SearchRequest{Query: "lighthouse", AppName: "app", UserID: "u"})
	if err != nil || len(found.Results) != 1 {
		t.Errorf("the flat store after chromem's snapshot: %+v, %v; want it built again, finding the event", found, err)
	}
	if err := flat.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(snapshot) || !exists(file) {
		t.Errorf("the flat store's index: snapshot left %v, file kept %v; want the file alone", exists(snapshot), exists(file))
	}
	again := open("chromem")
	defer again.Close()
	if exists(file) {
		t.Error("back to chromem, the flat store's file is left behind")
	}
}

// An index of another type (the keyword default's, after a switch to
// vector search, say) is removed at start: nothing would keep it up to
// date, not even an erasure.
func TestAnIndexOfAnotherTypeIsRemoved(t *testing.T) {
	dir := t.TempDir()
	open := func(kind string) *Services {
		t.Helper()
		return openWithIndex(t, dir, "{type: "+kind+", embedder: glove}")
	}
	keyword, vector := filepath.Join(dir, "index", "keyword.db"), filepath.Join(dir, "index", "vector.db")
	svcs := open("keyword")
	appendAndFind(t, svcs)
	if err := svcs.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(keyword) {
		t.Fatal("the keyword index kept no file")
	}
	svcs = open("vector")
	defer svcs.Close()
	if exists(keyword) || exists(keyword+"-wal") || !exists(vector) {
		t.Errorf("after the switch to vector search: keyword index left %v, vector index kept %v; want the vector index alone", exists(keyword), exists(vector))
	}
	found, err := svcs.Index.Search(t.Context(), &index.SearchRequest{Query: "lighthouse", AppName: "app", UserID: "u"})
	if err != nil || len(found.Results) != 1 {
		t.Errorf("the vector index after the switch: %+v, %v; want it built again, finding the event", found, err)
	}
}

// The zero configuration's index finds words and meaning with e5-small,
// and its facts find meaning with the built-in sentence encoder: a
// question in other words finds the fact.
func TestZeroConfigFactsFindMeaning(t *testing.T) {
	t.Setenv("HECTOR_FACTS_KEY", "")
	c := config.Zero(config.Overrides{DataDir: t.TempDir()})
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	if c.Server.Index.Type != "hybrid" || c.Server.Index.Embedder != "e5-small" {
		t.Fatalf("the zero configuration's index is %s with %q, want hybrid with e5-small", c.Server.Index.Type, c.Server.Index.Embedder)
	}
	alice := facts.UserScope("app", "alice")
	if _, err := svcs.Facts.Store(t.Context(), alice, facts.StoreRequest{Key: "pet", Value: "Has a dog named Rex"}); err != nil {
		t.Fatal(err)
	}
	found, err := svcs.Facts.Search(t.Context(), alice, "Do you remember my animals?", 3, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Key != "pet" {
		t.Errorf("a question in other words found %+v, want the fact about Rex", found)
	}
}

// A database's max_connections bounds its pool; SQLite's is not bounded.
func TestMaxConnections(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{"", 0}, // SQLite: no bound
		{"    max_connections: 3\n", 3},
	} {
		dir := t.TempDir()
		cfg, err := config.Parse("t.yaml", []byte("server: {data_dir: "+dir+"}\ndatabases:\n  main:\n    driver: sqlite\n    dsn: "+dir+"/h.db\n"+tc.yaml), config.Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		s := &Services{dbs: map[string]*gorm.DB{}}
		db, err := s.sqlDB(cfg, "main")
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Stats().MaxOpenConnections; got != tc.want {
			t.Errorf("%q: at most %d connections, want %d", tc.yaml, got, tc.want)
		}
		db.Close()
	}
}
