package factstest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/facts"
)

// A key stored again keeps its history: each value supersedes the one
// before, which says until when it held and what replaced it; the same
// value again adds nothing; the past is read with RecallAt and ListAt.
func testHistory(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	t0 := clock.Now()
	write := func(value string, want facts.Decision) *facts.Fact {
		t.Helper()
		f, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "home/city", Value: value})
		if err != nil {
			t.Fatal(err)
		}
		if f.Decision != want {
			t.Errorf("storing %q: decision %q, want %q", value, f.Decision, want)
		}
		return f
	}
	v1 := write("Lisbon", facts.Added)
	clock.Advance(time.Hour)
	v2 := write("Porto", facts.Updated)
	clock.Advance(time.Hour)
	if again := write("Porto", facts.Unchanged); again.ID != v2.ID || !again.ExpiresAt.Equal(clock.Now().Add(90*24*time.Hour)) {
		t.Errorf("the same value again = %+v, want version %s with its expiry renewed", again, v2.ID)
	}
	clock.Advance(time.Hour)
	v3 := write("Faro", facts.Updated)

	versions, err := svc.History(ctx, alice, "home/city")
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 3 {
		t.Fatalf("history has %d versions, want 3: %+v", len(versions), versions)
	}
	for i, want := range []*facts.Fact{v1, v2, v3} {
		got := versions[i]
		if got.ID != want.ID || got.Value != want.Value || !got.ValidFrom.Equal(want.ValidFrom) || !got.CreatedAt.Equal(t0) {
			t.Errorf("version %d = %+v, want %+v created at %v", i, got, want, t0)
		}
	}
	if h := versions[0]; h.SupersededBy != v2.ID || h.ValidTo == nil || !h.ValidTo.Equal(v2.ValidFrom) || h.Supersedes != "" {
		t.Errorf("the first version = %+v: want it superseded by %s at %v", h, v2.ID, v2.ValidFrom)
	}
	if h := versions[1]; h.Supersedes != v1.ID || h.SupersededBy != v3.ID || !h.ValidTo.Equal(v3.ValidFrom) {
		t.Errorf("the second version = %+v", h)
	}
	if h := versions[2]; h.Supersedes != v2.ID || h.SupersededBy != "" || h.ValidTo != nil {
		t.Errorf("the current version = %+v", h)
	}
	if cur, err := svc.Recall(ctx, alice, "home/city"); err != nil || cur.ID != v3.ID {
		t.Errorf("Recall = %+v, %v; want the current version", cur, err)
	}
	for at, want := range map[time.Duration]string{0: "Lisbon", 30 * time.Minute: "Lisbon", time.Hour: "Porto", 150 * time.Minute: "Porto", 3 * time.Hour: "Faro"} {
		if f, err := svc.RecallAt(ctx, alice, "home/city", t0.Add(at)); err != nil || f.Value != want {
			t.Errorf("RecallAt(t0+%s) = %+v, %v; want %q", at, f, err, want)
		}
	}
	if _, err := svc.RecallAt(ctx, alice, "home/city", t0.Add(-time.Second)); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("RecallAt before the first version: %v, want ErrNotFound", err)
	}
	clock.Advance(time.Minute)
	store(t, svc, alice, "home/street", "Rua Augusta", "")
	if fs, err := svc.ListAt(ctx, alice, "home/", "", t0.Add(90*time.Minute)); err != nil || len(fs) != 1 || fs[0].Value != "Porto" {
		t.Errorf("ListAt(t0+90m) = %+v, %v; want Porto alone (the street came later)", fs, err)
	}
	if fs, err := svc.ListAt(ctx, alice, "home/", "", clock.Now()); err != nil || keys(fs) != "home/street home/city" {
		t.Errorf("ListAt(now) = %q, %v", keys(fs), err)
	}
	// Another user's history is out of reach.
	if _, err := svc.History(ctx, facts.UserScope("app", "bob"), "home/city"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("bob reading alice's history: %v", err)
	}
}

// Invalidating ends the current version with no successor: the fact no
// longer holds, and its history keeps it. Forgetting a key removes every
// version.
func testInvalidateAndForget(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	v1 := store(t, svc, alice, "job", "nurse", "")
	clock.Advance(time.Hour)
	ended, err := svc.Invalidate(ctx, alice, "job")
	if err != nil || ended.ID != v1.ID || ended.ValidTo == nil || !ended.ValidTo.Equal(clock.Now()) || ended.SupersededBy != "" {
		t.Fatalf("Invalidate = %+v, %v", ended, err)
	}
	if _, err := svc.Recall(ctx, alice, "job"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("Recall of an invalidated fact: %v", err)
	}
	if _, err := svc.Invalidate(ctx, alice, "job"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("invalidating twice: %v", err)
	}
	if fs, _ := svc.List(ctx, alice, "", ""); len(fs) != 0 {
		t.Errorf("List after invalidating = %q", keys(fs))
	}
	clock.Advance(time.Hour)
	v2 := store(t, svc, alice, "job", "doctor", "")
	if v2.Supersedes != "" || v2.Decision != facts.Added {
		t.Errorf("a value after an invalidated one = %+v: it supersedes nothing", v2)
	}
	versions, err := svc.History(ctx, alice, "job")
	if err != nil || len(versions) != 2 || versions[0].Value != "nurse" || versions[1].Value != "doctor" {
		t.Fatalf("history = %+v, %v", versions, err)
	}
	if f, err := svc.RecallAt(ctx, alice, "job", v1.ValidFrom.Add(90*time.Minute)); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("RecallAt between the invalidation and the new value = %+v, %v; want nothing", f, err)
	}
	if n, err := svc.Forget(ctx, alice, "key:job"); err != nil || n != 1 {
		t.Errorf("Forget = %d, %v", n, err)
	}
	if _, err := svc.History(ctx, alice, "job"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("history after forgetting: %v, want every version gone", err)
	}
	if _, err := svc.RecallAt(ctx, alice, "job", v1.ValidFrom); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("the past after forgetting: %v, want nothing", err)
	}
	// A key whose only version was invalidated is forgotten too.
	store(t, svc, alice, "pet", "cat", "")
	svc.Invalidate(ctx, alice, "pet")
	if _, err := svc.Forget(ctx, alice, "all"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.History(ctx, alice, "pet"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("an invalidated key after forget all: %v", err)
	}
}

// A key's history lives as long as its newest version: an old version
// with a short TTL is kept while the key is, and goes with it.
func testHistoryExpiry(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "k", Value: "short-lived", TTL: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "k", Value: "for a day", TTL: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if versions, err := svc.History(ctx, alice, "k"); err != nil || len(versions) != 2 {
		t.Errorf("history after the first version's own TTL = %+v, %v; want both versions", versions, err)
	}
	clock.Advance(24 * time.Hour)
	if n, err := svc.Sweep(ctx); err != nil || n != 2 {
		t.Errorf("sweep after the key expired = %d, %v; want both versions", n, err)
	}
	if _, err := svc.History(ctx, alice, "k"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("history after the key expired: %v", err)
	}
}

// Every fact says where it came from: written by whom, or extracted from
// which session and events by which model.
func testProvenance(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	f := store(t, svc, alice, "plain", "written by a program", "")
	if f.Source.Kind != facts.SourceWritten || f.Source.By != "sdk" {
		t.Errorf("a fact stored without a source: %+v", f.Source)
	}
	src := facts.Source{Kind: facts.SourceExtracted, SessionID: "s1", EventIDs: []string{"e1", "e2"}, Model: "gpt-x"}
	if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "learned", Value: "likes hiking", Source: src}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Recall(ctx, alice, "learned")
	if err != nil || got.Source.Kind != src.Kind || got.Source.SessionID != "s1" || len(got.Source.EventIDs) != 2 || got.Source.Model != "gpt-x" {
		t.Errorf("an extracted fact's source = %+v, %v", got.Source, err)
	}
	var ve *facts.ValidationError
	for _, bad := range []facts.Source{{Kind: "guessed"}, {Kind: facts.SourceWritten, Agent: "a\x00b"}, {Kind: facts.SourceExtracted, EventIDs: make([]string, 101)}} {
		if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "bad", Value: "v", Source: bad}); !errors.As(err, &ve) || ve.Code != "source_invalid" {
			t.Errorf("source %+v: %v, want source_invalid", bad, err)
		}
	}
}

// Any sequence of writes, supersessions and invalidations keeps a
// complete, acyclic history, and RecallAt returns what held at each
// instant: a model of the timeline is checked against the service.
func testHistoryProperty(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c"}
	values := []string{"red", "green", "blue"}
	type span struct {
		from  time.Time
		value string // "" while nothing held
	}
	timeline := map[string][]span{}
	held := func(key string, at time.Time) string {
		v := ""
		for _, s := range timeline[key] {
			if !s.from.After(at) {
				v = s.value
			}
		}
		return v
	}
	start := clock.Now()
	for step := range 60 {
		clock.Advance(time.Duration(1+rng.IntN(90)) * time.Minute)
		key := keys[rng.IntN(len(keys))]
		now := clock.Now()
		if rng.IntN(4) == 0 {
			_, err := svc.Invalidate(ctx, alice, key)
			if had := held(key, now) != ""; had != (err == nil) {
				t.Fatalf("step %d: invalidating %s (holding %v): %v", step, key, had, err)
			}
			timeline[key] = append(timeline[key], span{now, ""})
			continue
		}
		value := values[rng.IntN(len(values))]
		if _, err := svc.Store(ctx, alice, facts.StoreRequest{Key: key, Value: value}); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if held(key, now) != value {
			timeline[key] = append(timeline[key], span{now, value})
		}
	}
	for _, key := range keys {
		versions, err := svc.History(ctx, alice, key)
		if err != nil {
			t.Fatal(err)
		}
		checkChain(t, key, versions)
		for probe := start; probe.Before(clock.Now().Add(time.Hour)); probe = probe.Add(7 * time.Minute) {
			f, err := svc.RecallAt(ctx, alice, key, probe)
			want := held(key, probe)
			switch {
			case want == "" && !errors.Is(err, facts.ErrNotFound):
				t.Fatalf("%s at %v: %+v, %v; want nothing", key, probe, f, err)
			case want != "" && (err != nil || f.Value != want):
				t.Fatalf("%s at %v: %+v, %v; want %q", key, probe, f, err, want)
			}
		}
	}
}

// checkChain checks that versions, oldest first, form a history: each
// begins no earlier than the one before ends, a superseded version names
// the next and the next names it, no ID repeats, and only the last may be
// current.
func checkChain(t *testing.T, key string, versions []facts.Fact) {
	t.Helper()
	seen := map[string]bool{}
	for i, v := range versions {
		if seen[v.ID] || v.ID == "" {
			t.Fatalf("%s: version %d has a repeated or empty ID %q", key, i, v.ID)
		}
		seen[v.ID] = true
		last := i == len(versions)-1
		if v.ValidTo == nil && !last {
			t.Fatalf("%s: version %d is current but not the last", key, i)
		}
		if v.ValidTo != nil && v.ValidTo.Before(v.ValidFrom) {
			t.Fatalf("%s: version %d ends before it begins", key, i)
		}
		if last {
			break
		}
		next := versions[i+1]
		if next.ValidFrom.Before(*v.ValidTo) {
			t.Fatalf("%s: version %d begins before version %d ends", key, i+1, i)
		}
		if v.SupersededBy != "" && (v.SupersededBy != next.ID || next.Supersedes != v.ID || !next.ValidFrom.Equal(*v.ValidTo)) {
			t.Fatalf("%s: version %d is superseded by %q, and the next is %s (supersedes %q)", key, i, v.SupersededBy, next.ID, next.Supersedes)
		}
		if v.SupersededBy == "" && next.Supersedes != "" {
			t.Fatalf("%s: version %d was invalidated, yet the next supersedes %q", key, i, next.Supersedes)
		}
	}
}

// A fact written under a new key that repeats one the scope holds, in the
// same words (here without an embedder: words alone), is refused naming
// the key that holds it, or, when the write asks to merge it, adds
// nothing: the fact held is returned, its expiry renewed. A near-miss,
// the same words with their numbers in another order, a value that means
// something only with its key, and another user's fact are kept.
func testDuplicates(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	held := store(t, svc, alice, "drinks", "Does not drink alcohol", "")
	clock.Advance(time.Hour)
	_, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "alcohol", Value: "Doesn't drink alcohol"})
	if !errors.Is(err, facts.ErrDuplicate) || !strings.Contains(err.Error(), `"drinks"`) {
		t.Errorf("a repeat under another key, not asked to merge: %v; want ErrDuplicate naming the key", err)
	}
	again, err := svc.Store(ctx, alice, facts.StoreRequest{Key: "alcohol", Value: "Doesn't drink alcohol", MergeDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Decision != facts.Duplicate || again.ID != held.ID || again.Key != "drinks" || !again.ExpiresAt.Equal(clock.Now().Add(90*24*time.Hour)) {
		t.Errorf("a repeat under another key = %+v; want the fact held, its expiry renewed", again)
	}
	for _, kv := range [][2]string{{"coffee", "Does not drink coffee"}, {"deploy/tool", "Konflux"}, {"ci/tool", "Konflux"},
		{"office/room", "Office is room 12 on floor 3"}, {"home/flat", "Office is room 3 on floor 12"},
		{"gate/front", "Gate code is 1 2 3 4"}, {"gate/back", "Gate code is 4 3 2 1"}} {
		key, value := kv[0], kv[1]
		if f, err := svc.Store(ctx, alice, facts.StoreRequest{Key: key, Value: value, MergeDuplicates: true}); err != nil || f.Decision != facts.Added {
			t.Errorf("storing %s = %q: %+v, %v; want it added", key, value, f, err)
		}
	}
	if f, err := svc.Store(ctx, facts.UserScope("app", "bob"), facts.StoreRequest{Key: "alcohol", Value: "Doesn't drink alcohol"}); err != nil || f.Decision != facts.Added {
		t.Errorf("bob's own fact = %+v, %v; alice's is not his", f, err)
	}
	if fs, _ := svc.List(ctx, alice, "", ""); keys(fs) != "ci/tool coffee deploy/tool gate/back gate/front home/flat office/room drinks" {
		t.Errorf("alice's facts: %q", keys(fs))
	}
}

// A search finds the user's current facts by their key's and value's words
// (here without an embedder), best first; as_of searches what held then;
// another user's facts are never found.
func testSearch(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	store(t, svc, alice, "pets/dog", "Has a dog named Rex", "")
	store(t, svc, alice, "job", "Works as a nurse at the hospital", "")
	store(t, svc, facts.UserScope("app", "bob"), "pets/cat", "Has a dog named Rex and a cat", "")
	before := clock.Now()
	clock.Advance(time.Hour)
	store(t, svc, alice, "job", "Works as a doctor at the hospital", "")
	found := func(query string, asOf time.Time) []string {
		t.Helper()
		ms, err := svc.Search(ctx, alice, query, 5, asOf)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if m.Score <= 0 {
				t.Errorf("%q found %q with score %v", query, m.Key, m.Score)
			}
			out = append(out, m.Value)
		}
		return out
	}
	if got := found("what is the dog called", time.Time{}); len(got) != 1 || got[0] != "Has a dog named Rex" {
		t.Errorf("a search for the dog found %q", got)
	}
	if got := found("hospital job", time.Time{}); len(got) != 1 || got[0] != "Works as a doctor at the hospital" {
		t.Errorf("a search for the job found %q, want the current value", got)
	}
	if got := found("hospital job", before); len(got) != 1 || got[0] != "Works as a nurse at the hospital" {
		t.Errorf("a search for the job as of before found %q", got)
	}
	if got := found("zeppelin", time.Time{}); len(got) != 0 {
		t.Errorf("a search sharing no word found %q", got)
	}
	if ms, err := svc.Search(ctx, facts.UserScope("app", "carol"), "dog Rex", 5, time.Time{}); err != nil || len(ms) != 0 {
		t.Errorf("carol's search = %+v, %v", ms, err)
	}
}

// Forgetting a user removes every version of their facts, in their scope
// and their sessions', and nothing of the app's nor of another user's.
func testForgetUser(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	session := facts.SessionScope("app", "alice", "s1")
	store(t, svc, alice, "home", "Lives in Lisbon", "")
	clock.Advance(time.Minute)
	store(t, svc, alice, "home", "Lives in Porto", "")
	store(t, svc, session, "mood", "Tired today", "")
	store(t, svc, facts.AppScope("app"), "policy", "Deploy on Fridays", "")
	bob := facts.UserScope("app", "bob")
	store(t, svc, bob, "home", "Lives in Madrid", "")
	store(t, svc, facts.UserScope("other", "alice"), "home", "Lives in Oslo", "")
	all, err := svc.UserFacts(ctx, "app", "alice")
	if err != nil || len(all) != 3 || all[0].Scope != facts.ScopeSession || all[0].SessionID != "s1" ||
		all[1].Value != "Lives in Lisbon" || all[1].ValidTo == nil || all[2].Value != "Lives in Porto" || all[2].ValidTo != nil {
		t.Errorf("UserFacts = %+v, %v; want her session's fact, then her two versions of home, oldest first", all, err)
	}
	n, err := svc.ForgetUser(ctx, "app", "alice")
	if err != nil || n != 3 {
		t.Fatalf("ForgetUser = %d, %v; want 3 versions", n, err)
	}
	for _, scope := range []facts.Scope{alice, session} {
		if fs, _ := svc.List(ctx, scope, "", ""); len(fs) != 0 {
			t.Errorf("%+v after forgetting alice: %q", scope, keys(fs))
		}
	}
	if _, err := svc.History(ctx, alice, "home"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("alice's history after forgetting her: %v", err)
	}
	for scope, want := range map[facts.Scope]string{facts.AppScope("app"): "Deploy on Fridays", bob: "Lives in Madrid", facts.UserScope("other", "alice"): "Lives in Oslo"} {
		if fs, _ := svc.List(ctx, scope, "", ""); len(fs) != 1 || fs[0].Value != want {
			t.Errorf("%+v after forgetting alice in app: %+v", scope, fs)
		}
	}
	if n, err := svc.ForgetUser(ctx, "app", "alice"); err != nil || n != 0 {
		t.Errorf("forgetting her again = %d, %v", n, err)
	}
	if _, err := svc.ForgetUser(ctx, "app", ""); err == nil {
		t.Error("forgetting a user without naming one: no error")
	}
}

// Owners lists the users holding facts, theirs or their sessions', current
// or only past, by app then user in bytes' order ("B" before "a", "é"
// last), paged by position, one app or all; an app's own facts name no
// user, and a forgotten user is gone.
func testOwners(t *testing.T, svc *facts.Service, clock *Clock) {
	ctx := t.Context()
	store(t, svc, facts.UserScope("app", "alice"), "home", "Lives in Lisbon", "")
	store(t, svc, facts.UserScope("app", "alice"), "pet", "Has a dog", "")
	store(t, svc, facts.SessionScope("app", "bob", "s1"), "mood", "Tired today", "")
	store(t, svc, facts.UserScope("app", "Bea"), "home", "Lives in Oslo", "")
	store(t, svc, facts.UserScope("app", "émile"), "home", "Lives in Nice", "")
	store(t, svc, facts.UserScope("zoo", "carol"), "home", "Lives in Rome", "")
	store(t, svc, facts.UserScope("app", "dan"), "home", "Lives in Bonn", "")
	if _, err := svc.Invalidate(ctx, facts.UserScope("app", "dan"), "home"); err != nil { // only a past fact left
		t.Fatal(err)
	}
	store(t, svc, facts.AppScope("app"), "policy", "Deploy on Fridays", "")
	list := func(app string, after facts.Owner, limit int) string {
		t.Helper()
		owners, err := svc.Owners(ctx, app, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range owners {
			out = append(out, fmt.Sprintf("%s/%s:%d", o.App, o.User, o.Facts))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		app   string
		after facts.Owner
		limit int
		want  string
	}{
		{"", facts.Owner{}, 10, "app/Bea:1 app/alice:2 app/bob:1 app/dan:0 app/émile:1 zoo/carol:1"},
		{"", facts.Owner{}, 2, "app/Bea:1 app/alice:2"},
		{"", facts.Owner{App: "app", User: "alice"}, 3, "app/bob:1 app/dan:0 app/émile:1"},
		{"", facts.Owner{App: "app", User: "émile"}, 10, "zoo/carol:1"},
		{"zoo", facts.Owner{}, 10, "zoo/carol:1"},
		{"app", facts.Owner{App: "app", User: "dan"}, 10, "app/émile:1"},
	} {
		if got := list(c.app, c.after, c.limit); got != c.want {
			t.Errorf("Owners(%q, after %v, %d) = %q, want %q", c.app, c.after, c.limit, got, c.want)
		}
	}
	if _, err := svc.ForgetUser(ctx, "app", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := list("app", facts.Owner{}, 10); got != "app/Bea:1 app/bob:1 app/dan:0 app/émile:1" {
		t.Errorf("after forgetting alice: %q", got)
	}
}
