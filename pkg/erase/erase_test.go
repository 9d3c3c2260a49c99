package erase_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
	"github.com/hectormem/hector/pkg/userdata"
)

const canary = "zebra-canary-7731"

func open(t *testing.T) *app.Services {
	t.Helper()
	return openIn(t, t.TempDir())
}

// openIn opens the stores of a SQLite database in dir.
func openIn(t *testing.T, dir string) *app.Services {
	t.Helper()
	return openYAML(t, fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: sql}\n  artifacts: {backend: sql}\n"+
		"  facts: {backend: sql}\n  index: {type: keyword, persist: false}\n", dir))
}

// openYAML opens the stores of a configuration, closed when the test ends.
func openYAML(t *testing.T, yaml string) *app.Services {
	t.Helper()
	cfg, err := config.Parse("t.yaml", []byte(yaml), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := app.Open(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svcs.Close() })
	return svcs
}

// fill gives a user two sessions with events and state, a session
// artifact and a user artifact, user state, and facts of their own and of
// a session, every one holding the canary.
func fill(t *testing.T, svcs *app.Services, user string) {
	t.Helper()
	ctx := t.Context()
	for i := range 2 {
		resp, err := svcs.Sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: fmt.Sprintf("%s-%d", user, i),
			State: map[string]any{"topic": canary}})
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			ev := &session.Event{Author: user, Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("%s says %s, message %d", user, canary, j)),
				Actions: session.Actions{StateDelta: map[string]any{"user:last": canary}}}
			if err := svcs.Sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := svcs.Index.Index(ctx, resp.Session); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs.Artifacts.Save(ctx, &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: user, SessionID: resp.Session.ID(), Name: "notes.txt"},
			Body: strings.NewReader(canary)}); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs.Facts.Store(ctx, facts.SessionScope("app", user, resp.Session.ID()), facts.StoreRequest{Key: "mood", Value: "Talked about " + canary}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svcs.Artifacts.Save(ctx, &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: user, SessionID: user + "-0", Name: "user:profile.txt"},
		Body: strings.NewReader(canary)}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"Likes the " + canary, "Loves the " + canary + " a lot"} {
		if _, err := svcs.Facts.Store(ctx, facts.UserScope("app", user), facts.StoreRequest{Key: "animal", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
}

// view is what the API shows of a user, for comparing before and after.
func view(t *testing.T, svcs *app.Services, user string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	list, _ := svcs.Sessions.List(ctx, &session.ListRequest{AppName: "app", UserID: user})
	for _, s := range list.Sessions {
		got, _ := svcs.Sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: user, SessionID: s.ID()})
		for ev := range got.Session.Events().All() {
			fmt.Fprintf(&b, "%s %d %s\n", s.ID(), ev.Seq, ev.Message.Text())
		}
		arts, _ := svcs.Artifacts.List(ctx, "app", user, s.ID())
		for _, a := range arts {
			fmt.Fprintf(&b, "artifact %s %s\n", a.Name, a.SHA256)
		}
		fs, _ := svcs.Facts.List(ctx, facts.SessionScope("app", user, s.ID()), "", "")
		for _, f := range fs {
			fmt.Fprintf(&b, "fact %s %s\n", f.Key, f.Value)
		}
	}
	st, _ := svcs.Sessions.UserState(ctx, "app", user)
	fmt.Fprintf(&b, "state %v\n", st)
	h, _ := svcs.Facts.History(ctx, facts.UserScope("app", user), "animal")
	for _, f := range h {
		fmt.Fprintf(&b, "history %s %s\n", f.ID, f.Value)
	}
	found, _ := svcs.Index.Search(ctx, &index.SearchRequest{Query: canary, AppName: "app", UserID: user, Limit: 100})
	fmt.Fprintf(&b, "search %d\n", len(found.Results))
	return b.String()
}

// Erasing alice removes her from every store, says so in a receipt whose
// verification finds nothing left, and leaves bob exactly as he was.
// Erasing her again finds nothing.
func TestEraseUser(t *testing.T) {
	svcs := open(t)
	fill(t, svcs, "alice")
	fill(t, svcs, "bob")
	bobBefore := view(t, svcs, "bob")
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index)}
	r, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{})
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]int{}
	for _, c := range r.Stores {
		removed[c.Store] = c.Removed
		if c.Left != 0 {
			t.Errorf("%s: %d left after erasing", c.Store, c.Left)
		}
	}
	want := map[string]int{userdata.Sessions: 2, userdata.UserState: 1, userdata.Artifacts: 3, userdata.Facts: 2, userdata.Index: 6,
		userdata.Feed: 2}
	for store, n := range want {
		if removed[store] != n {
			t.Errorf("%s: removed %d, want %d (receipt %+v)", store, removed[store], n, r)
		}
	}
	if !r.Verified || r.By != "admin" || r.State != erase.StateDone || r.Finished.Before(r.Started) {
		t.Errorf("receipt = %+v", r)
	}
	if got := view(t, svcs, "alice"); got != "state map[]\nsearch 0\n" {
		t.Errorf("alice after erasing:\n%s", got)
	}
	if got := view(t, svcs, "bob"); got != bobBefore {
		t.Errorf("bob changed:\n%s\nwas:\n%s", got, bobBefore)
	}
	again, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{})
	if err != nil || !again.Verified {
		t.Fatalf("erasing again = %+v, %v", again, err)
	}
	for _, c := range again.Stores {
		if c.Removed != 0 {
			t.Errorf("erasing again removed %d from %s", c.Removed, c.Store)
		}
	}
}

// An erasure stopped half-way is finished by resuming its receipt: the
// counts add up exactly, and nothing is left. Here the process dies after
// the first session was deleted and before that was recorded.
func TestResumeAnErasure(t *testing.T) {
	svcs := open(t)
	fill(t, svcs, "alice")
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index)}
	var kept *erase.Receipt
	calls := 0
	crash := func(r *erase.Receipt) error {
		calls++
		if calls == 5 { // the start, the index, the artifacts, the first session to delete; deleted
			return fmt.Errorf("the process died")
		}
		copied := *r
		copied.Stores = append([]erase.Count(nil), r.Stores...)
		kept = &copied
		return nil
	}
	if _, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{Progress: crash}); err == nil {
		t.Fatal("no error from the interrupted erasure")
	}
	if kept.State != erase.StateRunning || kept.Stores[0].Removed != 0 || kept.Pending == "" {
		t.Fatalf("the record left = %+v", kept)
	}
	r, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{Resume: kept})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Verified || r.State != erase.StateDone || r.Resumed != 1 || r.Stores[0].Store != userdata.Sessions || r.Stores[0].Removed != 2 {
		t.Errorf("the resumed receipt = %+v", r)
	}
	if got := view(t, svcs, "alice"); got != "state map[]\nsearch 0\n" {
		t.Errorf("alice after the resumed erasure:\n%s", got)
	}
}

// A stop between a session's row going and its artifacts going (here a
// delete hook that fails once the session is gone, run ahead of the
// artifacts' own) leaves nothing behind a verified receipt: the resumed
// erasure counts every version of the user's artifacts, and the session
// ID used again shows none of them.
func TestAStopBetweenASessionAndItsArtifactsLeavesNone(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	arts, err := artifacts.NewFilesystem(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	var sessions *session.SQLService
	died := false
	dieOnceGone := func(ctx context.Context, app, user, id string) error {
		_, err := sessions.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id})
		if errors.Is(err, session.ErrNotFound) && !died {
			died = true
			return errors.New("the process died")
		}
		return nil
	}
	sessions, err = session.NewSQLService(sqldbtest.SQLiteAt(t, filepath.Join(dir, "hector.db")),
		session.WithDeleteHook(dieOnceGone), session.WithDeleteHook(arts.DeleteSession))
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	save := func(sessionID, name string) {
		t.Helper()
		if _, err := arts.Save(ctx, &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: "alice", SessionID: sessionID, Name: name},
			Body: strings.NewReader(canary + sessionID + name)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		id := fmt.Sprintf("s%d", i)
		if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: id}); err != nil {
			t.Fatal(err)
		}
		save(id, "chart.png")
		save(id, "chart.png")
	}
	save("", "user:profile.txt")

	svc := userdata.Services{Sessions: sessions, Artifacts: arts}
	var kept *erase.Receipt
	keep := func(r *erase.Receipt) error {
		copied := *r
		copied.Stores = slices.Clone(r.Stores)
		kept = &copied
		return nil
	}
	if _, err := erase.User(ctx, svc, "app", "alice", "admin", erase.Options{Progress: keep}); err == nil || !died {
		t.Fatalf("the erasure did not stop where it was made to: %v", err)
	}
	r, err := erase.User(ctx, svc, "app", "alice", "admin", erase.Options{Resume: kept})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Stores {
		if c.Store == userdata.Artifacts && (c.Removed != 7 || c.Left != 0) {
			t.Errorf("the receipt's artifacts: %+v, want 7 versions removed, none left", c)
		}
	}
	if !r.Verified {
		t.Errorf("receipt = %+v", r)
	}
	filepath.WalkDir(filepath.Join(dir, "artifacts"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left in the data directory: %s", strings.TrimPrefix(path, dir))
		}
		return err
	})
	if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: "s0"}); err != nil {
		t.Fatal(err)
	}
	if left, err := arts.List(ctx, "app", "alice", "s0"); err != nil || len(left) != 0 {
		t.Errorf("session s0 made again shows artifacts %+v, %v", left, err)
	}
}

// database is one SQL database the stores are opened on, and read from
// directly.
type database struct {
	svcs   *app.Services
	db     *gorm.DB
	tables string // the query listing its tables
}

// databases opens the stores on each SQL database there is to test.
func databases(t *testing.T) map[string]func(t *testing.T) database {
	t.Setenv(facts.KeyEnv, strings.Repeat("ab", 32)) // shared databases need a shared facts key
	openWith := func(t *testing.T, driver, dsn string) *app.Services {
		return openYAML(t, fmt.Sprintf("databases:\n  main: {driver: %s, dsn: %q}\nserver:\n  data_dir: %s\n"+
			"  sessions: {backend: sql, database: main}\n  artifacts: {backend: sql, database: main}\n  facts: {backend: sql, database: main}\n"+
			"  index: {type: keyword, persist: false}\n", driver, dsn, t.TempDir()))
	}
	return map[string]func(t *testing.T) database{
		"sqlite": func(t *testing.T) database {
			dir := t.TempDir()
			return database{openIn(t, dir), sqldbtest.SQLiteAt(t, filepath.Join(dir, "hector.db")), "SELECT name FROM sqlite_master WHERE type = 'table'"}
		},
		"postgres": func(t *testing.T) database {
			dsn := sqldbtest.PostgresDSN(t)
			db, err := sqldb.OpenPostgres(dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sqldb.Close(db) })
			return database{openWith(t, "postgres", dsn), db, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"}
		},
		"mysql": func(t *testing.T) database {
			dsn := sqldbtest.MySQLDSN(t)
			db, err := sqldb.OpenMySQL(dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sqldb.Close(db) })
			return database{openWith(t, "mysql", dsn), db, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"}
		},
	}
}

// rows dumps every row of every table, one line each, but the receipts'
// (which name the user they are about) and MySQL's feed counter (one
// number, naming no one, that every deletion moves on).
func (d database) rows(t *testing.T) []string {
	t.Helper()
	var tables []string
	if err := d.db.Raw(d.tables).Scan(&tables).Error; err != nil || len(tables) < 10 {
		t.Fatalf("tables %q, %v", tables, err)
	}
	var out []string
	for _, table := range tables {
		if table == "erasure_receipts" || table == "change_feed_head" {
			continue
		}
		var rs []map[string]any
		if err := d.db.Raw("SELECT * FROM " + table).Scan(&rs).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			for k, v := range r {
				if b, ok := v.([]byte); ok { // text as some drivers read it
					r[k] = string(b)
				}
			}
			out = append(out, fmt.Sprintf("%s %v", table, r))
		}
	}
	slices.Sort(out)
	return out
}

// Read from each database itself, not through any service: after erasing
// alice no row of any table names her or holds her canary, and every row
// that was not hers is there, byte for byte.
func TestNothingOfTheUserIsLeftInTheDatabase(t *testing.T) {
	for name, open := range databases(t) {
		t.Run(name, func(t *testing.T) { testNothingLeft(t, open(t)) })
	}
}

func testNothingLeft(t *testing.T, d database) {
	svcs := d.svcs
	fill(t, svcs, "alice")
	fill(t, svcs, "bob")
	before := d.rows(t)
	var notHers []string
	for _, r := range before {
		if !strings.Contains(r, "alice") {
			notHers = append(notHers, r)
		}
	}
	if len(notHers) == len(before) {
		t.Fatal("no row names alice before the erasure: the scan sees nothing")
	}
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index)}
	if _, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{}); err != nil {
		t.Fatal(err)
	}
	after := d.rows(t)
	for _, r := range after {
		if strings.Contains(r, "alice") || strings.Contains(r, canary) && !strings.Contains(r, "bob") && !strings.HasPrefix(r, "artifact_chunks ") {
			t.Errorf("left after erasing alice: %.200s", r)
		}
	}
	// Every row after was there before and was not hers; the rows not
	// naming her that went are her artifacts' contents (chunks name no
	// owner): her two session files and her own one.
	// The store's lineage counts the erasure, and names nobody.
	lineage := regexp.MustCompile(`^store_lineage map\[erasures:\d+ id:1 store_id:[0-9a-f-]+\]$`)
	var gone []string
	for _, r := range notHers {
		if !slices.Contains(after, r) && !lineage.MatchString(r) {
			gone = append(gone, r)
		}
	}
	// The one row the erasure may make is her newest tombstone, blanked:
	// it holds SQLite's change-feed cursors up (see EraseTombstones).
	blank := regexp.MustCompile(`^session_tombstones map\[app_name: feed_cursor:\d+ session_id: user_id:\]$`)
	blanks := 0
	for _, r := range after {
		if blank.MatchString(r) {
			blanks++
		} else if !slices.Contains(notHers, r) && !lineage.MatchString(r) {
			t.Errorf("new or changed by the erasure: %.200s", r)
		}
	}
	if blanks != 1 {
		t.Errorf("%d blank tombstones after the erasure, want 1", blanks)
	}
	if len(gone) != 3 {
		t.Errorf("%d rows not naming alice went, want her 3 artifacts' contents", len(gone))
	}
	for _, r := range gone {
		if !strings.HasPrefix(r, "artifact_chunks ") {
			t.Errorf("a row that was not alice's went: %.200s", r)
		}
	}
}

// Read byte by byte, not through any service: after erasing alice, no
// file under the data directory (the SQLite database and its WAL, the
// artifacts directory, the index file) holds her words or her
// sessions' IDs; deleted rows are overwritten, not left in free pages.
func TestNothingOfTheUserIsLeftInTheFiles(t *testing.T) {
	dir := t.TempDir()
	yaml := fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: sql}\n  artifacts: {backend: filesystem}\n"+
		"  facts: {backend: sql}\n  index: {type: keyword}\n", dir)
	svcs := openYAML(t, yaml)
	fill(t, svcs, "alice")
	fill(t, svcs, "bob")
	if err := svcs.Close(); err != nil { // the index on disk, as a previous run left it
		t.Fatal(err)
	}
	svcs = openYAML(t, yaml)
	traces := []string{"alice says", "alice-0", "alice-1"}
	scan := func() (found []string) {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, trace := range traces {
				if bytes.Contains(raw, []byte(trace)) {
					found = append(found, fmt.Sprintf("%s holds %q", strings.TrimPrefix(path, dir), trace))
				}
			}
			return nil
		})
		return found
	}
	if len(scan()) == 0 {
		t.Fatal("no file holds alice's words before the erasure: the scan sees nothing")
	}
	r, _, err := svcs.Erasures.Erase(t.Context(), "app", "alice", "admin", time.Hour)
	if err != nil || !r.Verified {
		t.Fatalf("erase = %+v, %v", r, err)
	}
	for _, f := range scan() {
		t.Errorf("after erasing alice: %s", f)
	}
}

// With the sessions' cache on, an erasure leaves no cached session of
// the user (read from the cache itself), and its receipt says so.
func TestTheSessionCacheForgetsTheUser(t *testing.T) {
	svcs := openYAML(t, fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: sql, cache: 10}\n  index: {type: keyword, persist: false}\n", t.TempDir()))
	fill(t, svcs, "alice")
	fill(t, svcs, "bob")
	for _, id := range []string{"alice-0", "alice-1", "bob-0"} { // read, and so cached
		user, _, _ := strings.Cut(id, "-")
		if _, err := svcs.Sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: user, SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	cache := svcs.Sessions.(*session.Cached)
	r, _, err := svcs.Erasures.Erase(t.Context(), "app", "alice", "admin", time.Hour)
	if err != nil || !r.Verified {
		t.Fatalf("erase = %+v, %v", r, err)
	}
	listed := false
	for _, c := range r.Stores {
		listed = listed || c.Store == "session_cache" && c.Left == 0
	}
	if !listed {
		t.Errorf("the receipt does not list the session cache: %+v", r.Stores)
	}
	if n := cache.ForgetUser("app", "alice"); n != 0 {
		t.Errorf("%d of alice's sessions still cached", n)
	}
	if n := cache.ForgetUser("app", "bob"); n != 1 {
		t.Errorf("bob's cached sessions: %d, want his 1", n)
	}
}

// A write that was under way when the erasure began, landing after its
// store was emptied, is found by the verification and removed by a second
// round: the receipt ends verified, with the late session counted.
func TestAnErasureRemovesWhatLandedDuringIt(t *testing.T) {
	svcs := open(t)
	fill(t, svcs, "alice")
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index)}
	landed := false
	late := func(r *erase.Receipt) error {
		if r.Stores[0].Removed == 2 && !landed { // her sessions are gone: now the late write lands
			landed = true
			_, err := svcs.Sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: "late"})
			return err
		}
		return nil
	}
	r, err := erase.User(t.Context(), svc, "app", "alice", "admin", erase.Options{Progress: late})
	if err != nil || !landed {
		t.Fatalf("erase: %v (the late write landed: %v)", err, landed)
	}
	if !r.Verified || r.Stores[0].Removed != 3 {
		t.Errorf("the receipt = %+v, want verified with 3 sessions removed", r)
	}
	if got := view(t, svcs, "alice"); got != "state map[]\nsearch 0\n" {
		t.Errorf("alice after the erasure:\n%s", got)
	}
}

// A receipt that an older version recorded for an ID no store takes is
// finished when resumed, rather than failing every start; a new erasure of
// such an ID is refused before anything is recorded.
func TestAResumeOfAnIDNoStoreTakesFinishes(t *testing.T) {
	svcs := open(t)
	fill(t, svcs, "alice")
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index),
		Caches: []userdata.Cache{noCache{}}}
	for _, user := range []string{"a\nb", strings.Repeat("u", 200)} {
		recorded := 0
		if _, err := erase.User(t.Context(), svc, "app", user, "admin", erase.Options{Progress: func(*erase.Receipt) error { recorded++; return nil }}); err == nil || recorded != 0 {
			t.Errorf("a new erasure of %q: %v, %d records", user, err, recorded)
		}
		stale := &erase.Receipt{AppName: "app", UserID: user, State: erase.StateRunning}
		r, err := erase.User(t.Context(), svc, "app", user, "admin", erase.Options{Resume: stale})
		if err != nil || r.State != erase.StateDone || !r.Verified {
			t.Errorf("resuming the erasure of %q: %+v, %v", user, r, err)
		}
	}
	if got := view(t, svcs, "alice"); !strings.Contains(got, "search 6") {
		t.Errorf("alice after erasing others:\n%s", got)
	}
}

// Every store is in the receipt, a cache too, even when it held nothing.
func TestTheReceiptListsEveryStore(t *testing.T) {
	svcs := open(t)
	svc := userdata.Services{Sessions: svcs.Sessions, Artifacts: svcs.Artifacts, Facts: svcs.Facts, Index: svcs.Index.(*index.Index),
		Caches: []userdata.Cache{noCache{}}}
	r, err := erase.User(t.Context(), svc, "app", "nobody", "admin", erase.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stores []string
	for _, c := range r.Stores {
		stores = append(stores, c.Store)
	}
	slices.Sort(stores)
	want := []string{"artifacts", "change_feed", "facts", "index", "sessions", "tool_cache", "user_state"}
	if !slices.Equal(stores, want) {
		t.Errorf("stores in the receipt = %v, want %v", stores, want)
	}
}

type noCache struct{}

func (noCache) Name() string                    { return "tool_cache" }
func (noCache) ForgetUser(app, user string) int { return 0 }
