package userarchive_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
	"github.com/hectormem/hector/pkg/userarchive"
)

// The records: one import a user at a time, renewed, released.
func TestImportRecords(t *testing.T) {
	for name, imports := range map[string]func(t *testing.T) userarchive.Imports{
		"inmemory": func(*testing.T) userarchive.Imports { return userarchive.NewInMemoryImports() },
		"sql": func(t *testing.T) userarchive.Imports {
			q, err := userarchive.NewSQLImports(sqldbtest.SQLite(t))
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, ctx := imports(t), t.Context()
			im := userarchive.Import{AppName: "a", UserID: "u", By: "admin", Process: "host:/data", Beat: time.Now()}
			if err := q.Claim(ctx, im); err != nil {
				t.Fatal(err)
			}
			if err := q.Claim(ctx, im); err != userarchive.ErrImportRunning {
				t.Errorf("a second claim: %v, want ErrImportRunning", err)
			}
			if err := q.Claim(ctx, userarchive.Import{AppName: "a", UserID: "other", Beat: time.Now()}); err != nil {
				t.Errorf("another user's claim: %v", err)
			}
			im.Writing, im.Beat = true, im.Beat.Add(time.Second)
			if err := q.Beat(ctx, im); err != nil {
				t.Fatal(err)
			}
			got, err := q.Unfinished(ctx)
			if err != nil || len(got) != 2 {
				t.Fatalf("Unfinished = %+v, %v", got, err)
			}
			i := slices.IndexFunc(got, func(g userarchive.Import) bool { return g.UserID == "u" })
			if g := got[i]; !g.Writing || g.Process != im.Process || g.By != "admin" || !g.Beat.Equal(im.Beat) {
				t.Errorf("the renewed record = %+v, want %+v", g, im)
			}
			if err := q.Release(ctx, "a", "u"); err != nil {
				t.Fatal(err)
			}
			if err := q.Claim(ctx, im); err != nil {
				t.Errorf("a claim once released: %v", err)
			}
		})
	}
}

// A start undoes its own process's imports at once, naming them until
// they are; another process's once its record goes stale, not before;
// one that had not begun writing is forgotten without an erasure.
func TestUndoUnfinished(t *testing.T) {
	ctx := t.Context()
	q := userarchive.NewInMemoryImports()
	now := time.Now()
	for _, im := range []userarchive.Import{
		{AppName: "a", UserID: "mine", Process: "me", Writing: true, Beat: now},
		{AppName: "a", UserID: "theirs-stopping", Process: "them", Writing: true, Beat: now.Add(-userarchive.StaleAfter + 200*time.Millisecond)},
		{AppName: "a", UserID: "claimed-only", Process: "them", Beat: now.Add(-time.Hour)},
		{AppName: "a", UserID: "theirs-alive", Process: "them", Writing: true, Beat: now.Add(time.Hour)}, // renewed as it goes
	} {
		if err := q.Claim(ctx, im); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var forgotten []string
	hold := make(chan struct{})
	forget := func(_ context.Context, app, user string) error {
		if user == "mine" {
			<-hold
		}
		mu.Lock()
		defer mu.Unlock()
		forgotten = append(forgotten, user)
		return nil
	}
	u, err := userarchive.UndoUnfinished(ctx, q, "me", forget, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Pending(); err == nil || !strings.Contains(err.Error(), `"mine"`) || strings.Contains(err.Error(), "theirs") {
		t.Errorf("Pending while this process's import is undone = %v", err)
	}
	close(hold)
	for deadline := time.Now().Add(time.Minute); ; {
		left, err := q.Unfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 1 && left[0].UserID == "theirs-alive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("records left: %+v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if slices.Sort(forgotten); !slices.Equal(forgotten, []string{"mine", "theirs-stopping"}) {
		t.Errorf("erased %q, want the two that had written and stopped", forgotten)
	}
	mu.Unlock()
	if err := q.Release(ctx, "a", "theirs-alive"); err != nil { // it ends, on its replica
		t.Fatal(err)
	}
	if err := u.Pending(); err != nil {
		t.Errorf("Pending once all are undone = %v", err)
	}
}
