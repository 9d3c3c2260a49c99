package facts_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/hectormem/hector/internal/testdb"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/facts/factstest"
)

var testKey = bytes.Repeat([]byte{7}, 32)

func TestInMemory(t *testing.T) {
	factstest.Run(t, func(t *testing.T, opts ...facts.Option) *facts.Service {
		s, err := facts.NewInMemory(testKey, opts...)
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

func TestSQLite(t *testing.T) { factstest.Run(t, sqlFactory(testdb.SQLite)) }

func TestPostgres(t *testing.T) {
	testdb.Postgres(t)
	factstest.Run(t, sqlFactory(testdb.Postgres))
}

func TestMySQL(t *testing.T) {
	testdb.MySQL(t)
	factstest.Run(t, sqlFactory(testdb.MySQL))
}

func TestDatabaseHoldsOnlyCiphertext(t *testing.T) {
	db := testdb.SQLite(t)
	svc, err := facts.NewSQL(t.Context(), db, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Store(t.Context(), facts.UserScope("app", "alice"), facts.StoreRequest{Key: "deploy/tool", Value: "Konflux pipelines"}); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	db.Raw("SELECT * FROM facts").Scan(&rows)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	for col, v := range rows[0] {
		if b, ok := v.([]byte); ok && bytes.Contains(b, []byte("Konflux")) || strings.Contains(strings.ToLower(asString(v)), "konflux") {
			t.Errorf("column %s holds the value in the clear: %v", col, v)
		}
	}
	// Moving a sealed value to another key or scope does not make it readable there.
	db.Exec("UPDATE facts SET fact_key = 'stolen'")
	if _, err := svc.Recall(t.Context(), facts.UserScope("app", "alice"), "stolen"); !errors.Is(err, facts.ErrWrongKey) {
		t.Errorf("a value moved to another key: %v", err)
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
		svc, err := facts.NewSQL(t.Context(), testdb.SQLiteAt(t, path), testKey)
		if err != nil {
			t.Fatal(err)
		}
		svc.Store(t.Context(), scope, facts.StoreRequest{Key: "k", Value: "remembered"})
	}
	svc, err := facts.NewSQL(t.Context(), testdb.SQLiteAt(t, path), testKey)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := svc.Recall(t.Context(), scope, "k"); err != nil || f.Value != "remembered" {
		t.Errorf("after a restart with the same key: %+v, %v", f, err)
	}
	other := bytes.Repeat([]byte{9}, 32)
	_, err = facts.NewSQL(t.Context(), testdb.SQLiteAt(t, path), other)
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
