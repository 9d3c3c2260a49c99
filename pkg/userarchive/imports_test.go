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

// A start undoes its place's last run's imports at once, naming them
// until they are; another process's once its record goes stale, not before;
// one that had not begun writing is forgotten without an erasure.
func TestUndoUnfinished(t *testing.T) {
	ctx := t.Context()
	q := userarchive.NewInMemoryImports()
	now := time.Now()
	for _, im := range []userarchive.Import{
		{AppName: "a", UserID: "mine", Process: userarchive.RunOf("here", "1"), Writing: true, Beat: now},
		{AppName: "a", UserID: "theirs-stopping", Process: "them", Writing: true, Beat: now.Add(-userarchive.StaleAfter + 200*time.Millisecond)},
		{AppName: "a", UserID: "claimed-only", Process: "them", Beat: now.Add(-time.Hour)},
		{AppName: "a", UserID: "theirs-alive", Process: "them", Writing: true, Beat: now.Add(time.Hour)}, // renewed as it goes
	} {
		if err := q.Claim(ctx, im); err != nil {
			t.Fatal(err)
		}
	}
	hold := make(chan struct{})
	forget, forgotten := forgetting("mine", hold)
	u, err := userarchive.UndoUnfinished(ctx, q, userarchive.RunOf("here", "2"), forget, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
	if got := forgotten(); !slices.Equal(got, []string{"mine", "theirs-stopping"}) {
		t.Errorf("erased %q, want the two that had written and stopped", got)
	}
	if err := q.Release(ctx, "a", "theirs-alive"); err != nil { // it ends, on its replica
		t.Fatal(err)
	}
	if err := u.Pending(); err != nil {
		t.Errorf("Pending once all are undone = %v", err)
	}
}

// An import of this run is never undone, whatever its record says: it is
// alive, or has answered. Only the last run's are, at once (a server
// killed during an import, restarted, and asked for the same import
// again, erased the second one: finding 1 of issue 71).
func TestAnImportOfThisRunIsNeverUndone(t *testing.T) {
	ctx := t.Context()
	q := userarchive.NewInMemoryImports()
	last, this := userarchive.RunOf("host:/data", "1"), userarchive.RunOf("host:/data", "2")
	for _, im := range []userarchive.Import{
		{AppName: "a", UserID: "cut-short", Process: last, Writing: true, Beat: time.Now()},
		{AppName: "a", UserID: "older-hector", Process: "host:/data", Writing: true, Beat: time.Now()}, // named before runs were
	} {
		if err := q.Claim(ctx, im); err != nil {
			t.Fatal(err)
		}
	}
	hold := make(chan struct{})
	forget, forgotten := forgetting("cut-short", hold)
	u, err := userarchive.UndoUnfinished(ctx, q, this, forget, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// While the last run's import is undone, this run imports two users,
	// one of them again the user being undone's neighbour; its records
	// beat late, as a busy process's may.
	for _, user := range []string{"again", "other"} {
		if err := q.Claim(ctx, userarchive.Import{AppName: "a", UserID: user, Process: this, Writing: true, Beat: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	close(hold)
	select {
	case <-u.Done():
	case <-time.After(time.Minute):
		t.Fatal("the undoer did not end")
	}
	if got := forgotten(); !slices.Equal(got, []string{"cut-short", "older-hector"}) {
		t.Errorf("erased %q, want only the last run's", got)
	}
	left, err := q.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, im := range left {
		users = append(users, im.UserID)
	}
	if slices.Sort(users); !slices.Equal(users, []string{"again", "other"}) {
		t.Errorf("records left: %q, want this run's two", users)
	}
	if err := u.Pending(); err != nil {
		t.Errorf("Pending = %v", err)
	}
}

// forgetting is an undoer's forget that records whom it erased (sorted,
// by forgotten), holding the erasure of user until hold closes.
func forgetting(user string, hold chan struct{}) (forget func(context.Context, string, string) error, forgotten func() []string) {
	var mu sync.Mutex
	var users []string
	forget = func(_ context.Context, _, u string) error {
		if u == user {
			<-hold
		}
		mu.Lock()
		defer mu.Unlock()
		users = append(users, u)
		return nil
	}
	forgotten = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(users))
	}
	return forget, forgotten
}
