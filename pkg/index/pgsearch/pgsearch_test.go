package pgsearch_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/pgsearch"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// database opens a fresh schema on the PostgreSQL server scripts/test
// starts (HECTOR_TEST_POSTGRES_DSN).
func database(t testing.TB) *sql.DB {
	gdb, err := sqldb.OpenPostgres(sqldbtest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close(gdb) })
	db, err := gdb.DB()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

var tables atomic.Int64

func stores(db *sql.DB) indextest.StoreFactory {
	return func(t testing.TB, shared string) index.Store {
		name := fmt.Sprintf("search_%d", tables.Add(1))
		if shared != "" {
			name = fmt.Sprintf("search_%08x", crc32.ChecksumIEEE([]byte(t.Name()+"/"+shared)))
		}
		s, err := pgsearch.New(db, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Drop(context.Background()) })
		return s
	}
}

func TestStore(t *testing.T) {
	indextest.RunStore(t, stores(database(t)), "keyword")
}

// Forgetting a user leaves no row of theirs in any table of the schema,
// read with SQL, and every other row as it was.
func TestErasure(t *testing.T) {
	db := database(t)
	indextest.RunErasure(t, stores(db)(t, ""), "keyword", func(t testing.TB) []string {
		var out []string
		tables, err := db.Query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tables.Next() {
			var name string
			tables.Scan(&name)
			names = append(names, name)
		}
		tables.Close()
		for _, name := range names {
			rows, err := db.Query(`SELECT row_to_json(t)::text FROM "` + name + `" t`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var row string
				rows.Scan(&row)
				out = append(out, name+" "+row)
			}
			rows.Close()
		}
		return out
	})
}

func TestKeywordOnly(t *testing.T) {
	s, err := pgsearch.New(database(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(t.Context(), index.Schema{Fingerprint: "hector vector", Dimensions: 64}); !errors.Is(err, index.ErrInvalidArgument) {
		t.Errorf("Open for vectors = %v, want ErrInvalidArgument", err)
	}
}

func TestBadTableNames(t *testing.T) {
	for _, name := range []string{"Upper", "1digit", "has-dash", "semi;colon", "a_name_that_is_much_too_long_for_hector_to_suffix_it_safely"} {
		if _, err := pgsearch.New(nil, name); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("New(%q) = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// BM25 in SQL scores as the in-process keyword index does: same results,
// same order, same scores.
func TestScoresAsInProcess(t *testing.T) {
	sessions := indextest.FillUsers(t, 2, 300)
	inProcess, err := index.NewKeyword(index.WithStemming(true))
	if err != nil {
		t.Fatal(err)
	}
	inSQL := indextest.External(t, "keyword", stores(database(t))(t, ""), 0)
	for _, idx := range []index.Service{inProcess, inSQL} {
		if err := idx.Rebuild(t.Context(), sessions, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	compared := 0
	for range 40 {
		q := &index.SearchRequest{Query: indextest.Sentence(r, 3), AppName: "app", UserID: "u1", Limit: 10}
		want, err := inProcess.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inSQL.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != len(want.Results) {
			t.Fatalf("%q: %d results in SQL, %d in process", q.Query, len(got.Results), len(want.Results))
		}
		compared += len(want.Results)
		for i, w := range want.Results {
			g := got.Results[i]
			if g.EventID != w.EventID || math.Abs(g.Score-w.Score) > 1e-9*w.Score {
				t.Errorf("%q #%d: %s %.12f in SQL, %s %.12f in process", q.Query, i+1, g.EventID, g.Score, w.EventID, w.Score)
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d results compared: the queries miss the corpus", compared)
	}
}
