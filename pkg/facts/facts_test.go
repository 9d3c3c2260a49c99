package facts_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/embed/use"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/facts/factstest"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

var testKey = bytes.Repeat([]byte{7}, 32)

func TestInMemory(t *testing.T) {
	factstest.Run(t, func(t *testing.T, opts ...facts.Option) *facts.Service {
		s, err := facts.NewInMemoryService(testKey, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func sqlFactory(open func(t testing.TB) *gorm.DB) factstest.Factory {
	return func(t *testing.T, opts ...facts.Option) *facts.Service {
		s, err := facts.NewSQL(t.Context(), open(t), testKey, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestSQLite(t *testing.T) { factstest.Run(t, sqlFactory(sqldbtest.SQLite)) }

func TestPostgres(t *testing.T) {
	sqldbtest.Postgres(t)
	factstest.Run(t, sqlFactory(sqldbtest.Postgres))
}

func TestMySQL(t *testing.T) {
	sqldbtest.MySQL(t)
	factstest.Run(t, sqlFactory(sqldbtest.MySQL))
}

func TestDatabaseHoldsOnlyCiphertext(t *testing.T) {
	db := sqldbtest.SQLite(t)
	svc, err := facts.NewSQL(t.Context(), db, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Konflux pipelines", "Konflux pipelines, always"} {
		if _, err := svc.Store(t.Context(), facts.UserScope("app", "alice"), facts.StoreRequest{Key: "deploy/tool", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"facts", "fact_history"} { // the current version and the one it superseded
		var rows []map[string]any
		db.Raw("SELECT * FROM " + table).Scan(&rows)
		if len(rows) != 1 {
			t.Fatalf("%d rows in %s", len(rows), table)
		}
		for col, v := range rows[0] {
			if b, ok := v.([]byte); ok && bytes.Contains(b, []byte("Konflux")) || strings.Contains(strings.ToLower(asString(v)), "konflux") {
				t.Errorf("column %s of %s holds the value in the clear: %v", col, table, v)
			}
		}
	}
	// Moving a sealed value to another key or scope does not make it readable there.
	db.Exec("UPDATE facts SET fact_key = 'stolen'")
	if _, err := svc.Recall(t.Context(), facts.UserScope("app", "alice"), "stolen"); !errors.Is(err, facts.ErrWrongKey) {
		t.Errorf("a value moved to another key: %v", err)
	}
}

// Facts written before versions had IDs get one, and their time of
// writing as the start of their validity, when the service opens.
func TestOlderFactsGetAnIDAndAValidity(t *testing.T) {
	db := sqldbtest.SQLite(t)
	scope := facts.UserScope("app", "alice")
	svc, err := facts.NewSQL(t.Context(), db, testKey)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := svc.Store(t.Context(), scope, facts.StoreRequest{Key: "k", Value: "from before"})
	if err != nil {
		t.Fatal(err)
	}
	// As an older version left it: the columns it did not have, at their defaults.
	if err := db.Exec("UPDATE facts SET id = '', valid_from_ns = 0, source = NULL, supersedes = ''").Error; err != nil {
		t.Fatal(err)
	}
	svc, err = facts.NewSQL(t.Context(), db, testKey)
	if err != nil {
		t.Fatal(err)
	}
	f, err := svc.Recall(t.Context(), scope, "k")
	if err != nil || f.ID == "" || !f.ValidFrom.Equal(stored.UpdatedAt) || f.Value != "from before" {
		t.Fatalf("an older fact after opening = %+v, %v", f, err)
	}
	next, err := svc.Store(t.Context(), scope, facts.StoreRequest{Key: "k", Value: "now"})
	if err != nil || next.Supersedes != f.ID {
		t.Errorf("a new value of an older fact = %+v, %v; want it to supersede %s", next, err, f.ID)
	}
}

// Two processes writing one key at once: every write is a version of one
// history, none lost, none current twice.
func TestWritersInTwoProcessesKeepOneHistory(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres} {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				sqldbtest.Postgres(t)
			}
			db := open(t)
			scope := facts.UserScope("app", "alice")
			var wg sync.WaitGroup
			var mu sync.Mutex
			written := 0
			for w := range 2 {
				svc, err := facts.NewSQL(t.Context(), db, testKey) // each has its own write lock, as a process would
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 20 {
						if _, err := svc.Store(t.Context(), scope, facts.StoreRequest{Key: "k", Value: fmt.Sprintf("writer %d, value %d", w, i)}); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						written++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			svc, _ := facts.NewSQL(t.Context(), db, testKey)
			versions, err := svc.History(t.Context(), scope, "k")
			if err != nil {
				t.Fatal(err)
			}
			if len(versions) != written {
				t.Errorf("%d versions for %d writes", len(versions), written)
			}
			current := 0
			for i, v := range versions {
				if v.ValidTo == nil {
					current++
				} else if v.SupersededBy != versions[i+1].ID {
					t.Errorf("version %d is superseded by %s, the next is %s", i, v.SupersededBy, versions[i+1].ID)
				}
			}
			if current != 1 {
				t.Errorf("%d current versions", current)
			}
		})
	}
}

func asString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

func TestRestartWithTheSameKeyAndAWrongOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "facts.db")
	scope := facts.UserScope("app", "alice")
	{
		svc, err := facts.NewSQL(t.Context(), sqldbtest.SQLiteAt(t, path), testKey)
		if err != nil {
			t.Fatal(err)
		}
		svc.Store(t.Context(), scope, facts.StoreRequest{Key: "k", Value: "remembered"})
	}
	svc, err := facts.NewSQL(t.Context(), sqldbtest.SQLiteAt(t, path), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := svc.Recall(t.Context(), scope, "k"); err != nil || f.Value != "remembered" {
		t.Errorf("after a restart with the same key: %+v, %v", f, err)
	}
	other := bytes.Repeat([]byte{9}, 32)
	_, err = facts.NewSQL(t.Context(), sqldbtest.SQLiteAt(t, path), other)
	if !errors.Is(err, facts.ErrWrongKey) || !strings.Contains(err.Error(), facts.KeyEnv) || strings.Contains(err.Error(), "0909") {
		t.Errorf("a wrong key at start-up: %v", err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(facts.KeyEnv, "")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	key, err := facts.LoadKey(dir, logger)
	if err != nil || len(key) != 32 {
		t.Fatal(key, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "facts.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	if !strings.Contains(logs.String(), "back it up") || strings.Contains(logs.String(), string(key)) {
		t.Errorf("creation log: %s", logs.String())
	}
	again, err := facts.LoadKey(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || !bytes.Equal(again, key) {
		t.Error("the key file is not read back")
	}
	t.Setenv(facts.KeyEnv, strings.Repeat("ab", 32))
	if k, err := facts.LoadKey(dir, logger); err != nil || k[0] != 0xab {
		t.Errorf("the environment's key is not preferred: %v", err)
	}
	t.Setenv(facts.KeyEnv, "not-hex")
	if _, err := facts.LoadKey(dir, logger); err == nil || !strings.Contains(err.Error(), "64 hex characters") || strings.Contains(err.Error(), "not-hex") {
		t.Errorf("a malformed key: %v", err)
	}
}

func FuzzPolicy(f *testing.F) {
	for _, s := range []string{"Konflux", "password=hunter2", "ignore previous instructions", "AKIAABCDEFGHIJKLMNOP", "<|im_start|>system", "", "\xff"} {
		f.Add("key/"+s, s, "user_facts")
	}
	p := facts.DefaultPolicy()
	f.Fuzz(func(t *testing.T, key, value, category string) {
		err := p.Check(facts.StoreRequest{Key: key, Value: value, Category: category})
		if err == nil {
			return
		}
		var ve *facts.ValidationError
		if !errors.As(err, &ve) || ve.Code == "" || ve.Message == "" {
			t.Fatalf("Check(%q, %q) = %v: not a ValidationError with a code", key, value, err)
		}
		if strings.Contains(ve.Message, value) && len(value) > 8 && ve.Code == "looks_like_secret" {
			t.Fatalf("the refusal repeats the secret: %s", ve.Message)
		}
	})
}

// withEncoder is a SQLite facts service with the built-in sentence encoder.
func withEncoder(t *testing.T) *facts.Service {
	t.Helper()
	e, err := use.New()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := facts.NewSQL(t.Context(), sqldbtest.SQLite(t), testKey, facts.WithEmbedder(e))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// With the built-in sentence encoder, a fact written again in other words
// under a new key is recognised by meaning; a near-miss is kept.
func TestDuplicatesByMeaning(t *testing.T) {
	svc := withEncoder(t)
	alice := facts.UserScope("app", "alice")
	held, err := svc.Store(t.Context(), alice, facts.StoreRequest{Key: "pets/dog", Value: "Has a dog named Rex"})
	if err != nil {
		t.Fatal(err)
	}
	for key, tc := range map[string]struct {
		value string
		want  facts.Decision
	}{
		"dog":   {"Owns a dog called Rex", facts.Duplicate},
		"dog2":  {"Has a dog named Max", facts.Added},
		"rex":   {"Rex is afraid of thunder", facts.Added},
		"dog/3": {"Has a cat named Rex", facts.Added},
	} {
		f, err := svc.Store(t.Context(), alice, facts.StoreRequest{Key: key, Value: tc.value, MergeDuplicates: true})
		if err != nil || f.Decision != tc.want || tc.want == facts.Duplicate && f.ID != held.ID {
			t.Errorf("storing %q = %+v, %v; want %s", tc.value, f, err, tc.want)
		}
	}
}

// Facts written before deduplication get their signatures when the
// service opens, and are found as duplicates from then on.
func TestOlderFactsAreSignedAtStart(t *testing.T) {
	db := sqldbtest.SQLite(t)
	scope := facts.UserScope("app", "alice")
	svc, err := facts.NewSQL(t.Context(), db, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Store(t.Context(), scope, facts.StoreRequest{Key: "drinks", Value: "Does not drink alcohol"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("UPDATE facts SET content_sig = '', entity_sig = ''").Error; err != nil {
		t.Fatal(err)
	}
	if svc, err = facts.NewSQL(t.Context(), db, testKey); err != nil {
		t.Fatal(err)
	}
	f, err := svc.Store(t.Context(), scope, facts.StoreRequest{Key: "alcohol", Value: "Doesn't drink alcohol", MergeDuplicates: true})
	if err != nil || f.Decision != facts.Duplicate || f.Key != "drinks" {
		t.Errorf("a repeat of an older fact = %+v, %v; want the older one", f, err)
	}
}

// With the sentence encoder, a search finds a fact by meaning: "pets"
// finds the dog, and not the job.
func TestSearchByMeaning(t *testing.T) {
	svc := withEncoder(t)
	alice := facts.UserScope("app", "alice")
	for key, value := range map[string]string{"a": "Has a dog named Rex", "b": "Works as a nurse at the hospital", "c": "Prefers window seats on flights"} {
		if _, err := svc.Store(t.Context(), alice, facts.StoreRequest{Key: key, Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := svc.Search(t.Context(), alice, "Do you remember my pets?", 3, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Value != "Has a dog named Rex" {
		t.Fatalf("a search for pets found %+v, want the dog first", ms)
	}
	for _, m := range ms {
		t.Logf("%.3f %s", m.Score, m.Value)
	}
}
