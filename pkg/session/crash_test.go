package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

const crashChildEnv = "HECTOR_CRASH_CHILD_DB"

// TestCrashSafety kills a process that is appending to a SQLite file and
// checks that every event it acknowledged is there after reopening.
func TestCrashSafety(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		appendUntilKilled(path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	db := sqldbtest.SQLiteAt(t, path)
	svc := newSQL(t, db)
	if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	sqldb.Close(db)

	child := exec.Command(os.Args[0], "-test.run=^TestCrashSafety$")
	child.Env = append(os.Environ(), crashChildEnv+"="+path)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		acked = append(acked, lines.Text())
		if len(acked) == 300 {
			// Mid-stream: the child's writers are inside transactions right now.
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	state, _ := child.Process.Wait()
	if ws, ok := state.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v (it acknowledged %d events)", state, len(acked))
	}

	db = sqldbtest.SQLiteAt(t, path)
	var check string
	if err := db.Raw("PRAGMA integrity_check").Scan(&check).Error; err != nil || check != "ok" {
		t.Fatalf("integrity check after the crash: %q, %v", check, err)
	}
	resp, err := newSQL(t, db).Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for ev := range resp.Session.Events().All() {
		stored[ev.ID] = true
		if ev.Seq != int64(len(stored)) {
			t.Fatalf("after the crash, event %d has seq %d", len(stored), ev.Seq)
		}
	}
	for _, id := range acked {
		if !stored[id] {
			t.Errorf("acknowledged event %s was lost in the crash", id)
		}
	}
	t.Logf("%d events acknowledged before SIGKILL, %d stored", len(acked), len(stored))
}

// appendUntilKilled is the child: four writers append and print each event
// ID only after AppendEvent has returned.
func appendUntilKilled(path string) {
	db, err := sqldb.OpenSQLite(path)
	if err != nil {
		panic(err)
	}
	svc, err := session.NewSQLService(db)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var printMu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			resp, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", NumRecentEvents: 1})
			if err != nil {
				panic(err)
			}
			for i := 0; ; i++ {
				ev := &session.Event{ID: fmt.Sprintf("w%d-%d", w, i), Author: "user",
					Message: session.NewTextMessage(session.RoleUser, "hello"),
					Actions: session.Actions{StateDelta: map[string]any{"user:count": i}}}
				if err := svc.AppendEvent(ctx, resp.Session, ev); err != nil {
					panic(err)
				}
				printMu.Lock()
				fmt.Println(ev.ID) // os.Stdout is unbuffered: the line is in the pipe when Println returns
				printMu.Unlock()
			}
		})
	}
	wg.Wait()
}
