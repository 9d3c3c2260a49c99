package session

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// sqliteWithSession returns a service on a new SQLite database holding
// session s of app/u, closed when t ends.
func sqliteWithSession(t *testing.T) *SQLService {
	svc, err := NewSQLService(sqldbtest.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if _, err := svc.Create(t.Context(), &CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// A write connection whose transaction state is unknown (its ROLLBACK
// failed) is dropped from the pool, and the next write takes a new one.
func TestWriterDropsAConnectionItCannotRollBack(t *testing.T) {
	svc := sqliteWithSession(t)
	ctx := t.Context()
	open := svc.sqlDB.Stats().OpenConnections
	boom := errors.New("boom")
	err := svc.writer.transaction(func(tx *sqlTx) error {
		if _, err := tx.exec("COMMIT"); err != nil { // ends the transaction early: ROLLBACK finds none
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("transaction: %v, want the write's own error", err)
	}
	if got := svc.sqlDB.Stats().OpenConnections; got != open-1 {
		t.Fatalf("%d connections open after the failed rollback, want %d: the write connection should be closed", got, open-1)
	}
	if _, err := svc.Create(ctx, &CreateRequest{AppName: "app", UserID: "u", SessionID: "s2"}); err != nil {
		t.Fatalf("the next write: %v", err)
	}
}

// Close leaves nothing of the service using the database: statements being
// prepared in the background are waited for, and prepared ones closed, so
// that the caller may close the database and remove its files.
func TestCloseReleasesEverything(t *testing.T) {
	svc := sqliteWithSession(t)
	ctx := t.Context()
	if _, err := svc.Get(ctx, &GetRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil { // prepares its statements in the background
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	svc.stmts.mu.Lock()
	pending, prepared := len(svc.stmts.pending), len(svc.stmts.stmts)
	svc.stmts.mu.Unlock()
	if pending+prepared != 0 {
		t.Errorf("after Close, %d statements are being prepared and %d stay prepared", pending, prepared)
	}
	if inUse := svc.sqlDB.Stats().InUse; inUse != 0 {
		t.Errorf("after Close, %d connections are in use", inUse)
	}
}

// A write that panics inside a group fails alone: its caller gets the panic,
// its neighbours commit, and later writes still run.
func TestGroupSurvivesAPanickingWrite(t *testing.T) {
	svc := sqliteWithSession(t)
	ctx := t.Context()
	// The first write leads, and holds its group open until the others
	// have queued behind it for the next.
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		svc.write(ctx, func(*sqlTx) error { close(started); <-release; return nil })
	})
	<-started
	errs := make(chan error, 2)
	var recovered any
	for i := range 3 {
		wg.Go(func() {
			if i == 1 {
				defer func() { recovered = recover() }()
				svc.write(ctx, func(*sqlTx) error { panic("boom") })
				return
			}
			errs <- svc.AppendEvent(ctx, Ref("app", "u", "s"), &Event{Author: "a"})
		})
	}
	for queued := 0; queued < 3; runtime.Gosched() {
		svc.group.mu.Lock()
		queued = len(svc.group.queue)
		svc.group.mu.Unlock()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a neighbour of the panicking write: %v", err)
		}
	}
	if p, ok := recovered.(*writePanic); !ok || p.value != "boom" {
		t.Errorf("the panicking write's caller recovered %v, want its panic", recovered)
	}
	if err := svc.AppendEvent(ctx, Ref("app", "u", "s"), &Event{Author: "a"}); err != nil {
		t.Fatalf("a write after the group: %v", err)
	}
	got, err := svc.Get(ctx, &GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil || got.Session.Events().Len() != 3 {
		t.Fatalf("Get: %v, %v; want the 3 appended events", got, err)
	}
}
