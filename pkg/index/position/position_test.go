package position_test

import (
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/index/position"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

func TestSQLite(t *testing.T)   { run(t, sqldbtest.SQLite(t)) }
func TestPostgres(t *testing.T) { run(t, sqldbtest.Postgres(t)) }
func TestMySQL(t *testing.T)    { run(t, sqldbtest.MySQL(t)) }

func run(t *testing.T, db *gorm.DB) {
	ctx := t.Context()
	name := fmt.Sprintf("idx-%s", t.Name())
	open := func() *position.SQL {
		p, err := position.NewSQL(ctx, db, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	one, two := open(), open()

	// One leads at a time; asking again is cheap and keeps the lead.
	for range 2 {
		if ok, err := one.Lead(ctx); err != nil || !ok {
			t.Fatalf("the first to ask does not lead: %v %v", ok, err)
		}
		if ok, err := two.Lead(ctx); err != nil || ok {
			t.Fatalf("a second leader: %v %v", ok, err)
		}
	}

	// The cursor moves by compare-and-set, and is shared.
	if c, err := two.Cursor(ctx); err != nil || c != 0 {
		t.Fatalf("a new cursor = %d, %v; want 0", c, err)
	}
	if ok, err := one.Advance(ctx, 0, 40); err != nil || !ok {
		t.Fatalf("Advance(0, 40) = %v, %v", ok, err)
	}
	if ok, err := one.Advance(ctx, 0, 50); err != nil || ok {
		t.Fatalf("Advance from a cursor it is not at = %v, %v; want false", ok, err)
	}
	if err := two.Rewind(ctx, 25); err != nil {
		t.Fatal(err)
	}
	if err := two.Rewind(ctx, 30); err != nil { // not past 30: unchanged
		t.Fatal(err)
	}
	if c, _ := one.Cursor(ctx); c != 25 {
		t.Errorf("after rewinding to 25 then 30, cursor = %d; want 25", c)
	}
	// Another position keeps its own cursor.
	other, err := position.NewSQL(ctx, db, name+"-other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if c, _ := other.Cursor(ctx); c != 0 {
		t.Errorf("another index's cursor = %d", c)
	}
	if ok, _ := other.Lead(ctx); !ok {
		t.Error("another index's lease is taken by this one's")
	}

	// The leader gives up (or dies): the other takes over.
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := two.Lead(ctx); err != nil || !ok {
		t.Fatalf("after the leader closed, the other does not lead: %v %v", ok, err)
	}
	if ok, _ := one.Lead(ctx); ok {
		t.Error("the former leader leads again while the other does")
	}
}

// A leader whose database connection dies loses the lease, and another
// replica takes it over.
func TestPostgresLeaderDies(t *testing.T) {
	db := sqldbtest.Postgres(t)
	ctx := t.Context()
	one, two := leaderAndFollower(t, db)
	// Kill the backend holding the lease's lock, as a crashed process's
	// would go, and wait (up to 10 s) until it is gone. Only that one:
	// other packages' tests hold advisory locks on the same server.
	var killed bool
	err := db.Raw(`SELECT pg_terminate_backend(l.pid, 10000) FROM pg_locks l,
			(SELECT hashtextextended(current_schema() || '/hector-index/' || 'dies', 0) AS k) AS lease
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid()
			AND l.classid = ((lease.k >> 32) & 4294967295)::oid AND l.objid = (lease.k & 4294967295)::oid`).Scan(&killed).Error
	if err != nil || !killed {
		t.Fatalf("terminating the leader's connection: %v %v", killed, err)
	}
	if ok, err := two.Lead(ctx); err != nil || !ok {
		t.Fatalf("after the leader's connection died, the other does not lead: %v %v", ok, err)
	}
	if ok, _ := one.Lead(ctx); ok {
		t.Error("the leader whose connection died still says it leads")
	}
}

// Without advisory locks the lease is per database: indexes of the same
// name on two databases each lead.
func TestSQLiteLeasePerDatabase(t *testing.T) {
	for range 2 {
		p, err := position.NewSQL(t.Context(), sqldbtest.SQLite(t), "same-name")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		if ok, err := p.Lead(t.Context()); err != nil || !ok {
			t.Errorf("an index on its own database does not lead: %v %v", ok, err)
		}
	}
}

// On MySQL too a leader whose connection dies loses the lease.
func TestMySQLLeaderDies(t *testing.T) {
	db := sqldbtest.MySQL(t)
	ctx := t.Context()
	one, two := leaderAndFollower(t, db)
	if ok, _ := two.Lead(ctx); ok {
		t.Fatal("two leaders")
	}
	var holder int64
	if err := db.Raw(`SELECT IS_USED_LOCK(CONCAT('hector-', LEFT(SHA2(CONCAT(DATABASE(), '/hector-index/', 'dies'), 256), 50)))`).Scan(&holder).Error; err != nil || holder == 0 {
		t.Fatalf("the lock's holder: %d %v", holder, err)
	}
	if err := db.Exec(fmt.Sprintf("KILL %d", holder)).Error; err != nil {
		t.Fatal(err)
	}
	for range 100 { // the server releases the lock once the killed connection is gone
		if ok, err := two.Lead(ctx); err == nil && ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, err := two.Lead(ctx); err != nil || !ok {
		t.Fatalf("after the leader's connection died, the other does not lead: %v %v", ok, err)
	}
	if ok, _ := one.Lead(ctx); ok {
		t.Error("the leader whose connection died still says it leads")
	}
}

// leaderAndFollower opens two positions of one name on db, the first
// leading.
func leaderAndFollower(t *testing.T, db *gorm.DB) (one, two *position.SQL) {
	t.Helper()
	for _, p := range []**position.SQL{&one, &two} {
		var err error
		if *p, err = position.NewSQL(t.Context(), db, "dies"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*p).Close() })
	}
	if ok, _ := one.Lead(t.Context()); !ok {
		t.Fatal("no leader")
	}
	return one, two
}
