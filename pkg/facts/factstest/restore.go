package factstest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/facts"
)

// testRestore: a user's facts, exported by UserFacts and restored into
// another service under another user ID, read back the same: every
// version, its validity and provenance, what held at a past instant.
func testRestore(t *testing.T, newService Factory) {
	ctx := t.Context()
	clock := &Clock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	from := newService(t, facts.WithClock(clock.Now))
	session := facts.SessionScope("app", "alice", "s1")
	store(t, from, alice, "home", "Lives in Lisbon", "")
	then := clock.Now()
	clock.Advance(time.Hour)
	store(t, from, alice, "home", "Lives in Porto", "")
	clock.Advance(time.Hour)
	if _, err := from.Store(ctx, session, facts.StoreRequest{Key: "mood", Value: "Tired today",
		Source: facts.Source{Kind: facts.SourceExtracted, SessionID: "s1", EventIDs: []string{"e1"}, Model: "m"}}); err != nil {
		t.Fatal(err)
	}
	store(t, from, alice, "pet", "Has a dog named Rex", "")
	if _, err := from.Invalidate(ctx, alice, "pet"); err != nil {
		t.Fatal(err)
	}
	exported, err := from.UserFacts(ctx, "app", "alice")
	if err != nil || len(exported) != 4 {
		t.Fatalf("UserFacts = %d versions, %v; want 4", len(exported), err)
	}

	to := newService(t, facts.WithClock(clock.Now))
	carol := facts.UserScope("app", "carol")
	store(t, to, facts.UserScope("app", "bob"), "home", "Lives in Madrid", "")
	if err := to.Restore(ctx, "app", "carol", "app-key", exported); err != nil {
		t.Fatal(err)
	}
	restored, err := to.UserFacts(ctx, "app", "carol")
	if err != nil {
		t.Fatal(err)
	}
	// Each version as exported, but for its source: imported by the
	// restorer, the archive's claim kept apart.
	var want []facts.ScopedFact
	json.Unmarshal([]byte(jsonText(t, exported)), &want)
	for i := range want {
		s := want[i].Source
		want[i].Source = facts.Source{Kind: facts.SourceImported, By: "app-key",
			Claimed: &facts.Claim{Kind: s.Kind, By: s.By, Agent: s.Agent, SessionID: s.SessionID, EventIDs: s.EventIDs, Model: s.Model}}
	}
	if a, b := jsonText(t, want), jsonText(t, restored); a != b {
		t.Errorf("restored facts differ from the exported ones:\n%s\nwant\n%s", b, a)
	}
	// Moved again, a version keeps the first claim, not a claim of a claim.
	third := newService(t, facts.WithClock(clock.Now))
	if err := third.Restore(ctx, "app", "erin", "admin", restored); err != nil {
		t.Fatal(err)
	}
	if again, err := third.UserFacts(ctx, "app", "erin"); err != nil || again[0].Source.By != "admin" || again[0].Source.Claimed.Kind != exported[0].Source.Kind {
		t.Errorf("moved twice: %+v, %v", again[0].Source, err)
	}
	if f, err := to.Recall(ctx, carol, "home"); err != nil || f.Value != "Lives in Porto" {
		t.Errorf("Recall(home) = %+v, %v", f, err)
	}
	if f, err := to.RecallAt(ctx, carol, "home", then); err != nil || f.Value != "Lives in Lisbon" {
		t.Errorf("RecallAt(home, then) = %+v, %v", f, err)
	}
	if _, err := to.Recall(ctx, carol, "pet"); !errors.Is(err, facts.ErrNotFound) {
		t.Errorf("the invalidated pet came back current: %v", err)
	}
	if h, err := to.History(ctx, carol, "home"); err != nil || len(h) != 2 || h[0].SupersededBy != h[1].ID {
		t.Errorf("History(home) = %+v, %v", h, err)
	}
	// Restored versions are written over as any others are.
	if f, err := to.Store(ctx, carol, facts.StoreRequest{Key: "home", Value: "Lives in Faro"}); err != nil || f.Supersedes != restored[2].ID {
		t.Errorf("storing over a restored fact = %+v, %v", f, err)
	}

	// A copy of alice in her own service: its versions are new, linked
	// as hers are, and hers are as they were.
	if err := from.Restore(ctx, "app", "gina", "admin", exported); err != nil {
		t.Fatalf("copying alice as gina: %v", err)
	}
	if h, err := from.History(ctx, facts.UserScope("app", "gina"), "home"); err != nil || len(h) != 2 || h[0].SupersededBy != h[1].ID ||
		h[1].Supersedes != h[0].ID || h[0].ID == exported[0].ID || h[1].ID == exported[1].ID || h[1].Value != "Lives in Porto" {
		t.Errorf("gina's History(home) = %+v, %v", h, err)
	}
	if again, err := from.UserFacts(ctx, "app", "alice"); err != nil || jsonText(t, again) != jsonText(t, exported) {
		t.Errorf("alice's facts after copying her: %v\n%s", err, jsonText(t, again))
	}

	if err := to.Restore(ctx, "app", "carol", "admin", exported); !errors.Is(err, facts.ErrUserHasFacts) {
		t.Errorf("restoring into a user with facts: %v, want ErrUserHasFacts", err)
	}
	broken := func(change func(fs []facts.ScopedFact)) []facts.ScopedFact {
		var fs []facts.ScopedFact
		json.Unmarshal([]byte(jsonText(t, exported)), &fs)
		change(fs)
		return fs
	}
	// An expiry past the policy's longest TTL is brought back to it.
	forever := broken(func(fs []facts.ScopedFact) { fs[3].ExpiresAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC) })
	fourth := newService(t, facts.WithClock(clock.Now))
	if err := fourth.Restore(ctx, "app", "frank", "admin", forever); err != nil {
		t.Fatal(err)
	}
	if got, _ := fourth.UserFacts(ctx, "app", "frank"); !got[3].ExpiresAt.Equal(clock.Now().Add(facts.DefaultPolicy().MaxTTL)) {
		t.Errorf("an imported expiry of 9999 became %v", got[3].ExpiresAt)
	}
	for name, fs := range map[string][]facts.ScopedFact{
		"an app's fact":      broken(func(fs []facts.ScopedFact) { fs[0].Scope = facts.ScopeApp }),
		"one ID twice":       broken(func(fs []facts.ScopedFact) { fs[1].ID = fs[0].ID }),
		"two current":        broken(func(fs []facts.ScopedFact) { fs[1].ValidTo = nil }),
		"a secret":           broken(func(fs []facts.ScopedFact) { fs[2].Value = "password: hunter2" }),
		"ended before begun": broken(func(fs []facts.ScopedFact) { fs[1].ValidFrom = fs[1].ValidTo.Add(time.Hour) }),
		"no ID":              broken(func(fs []facts.ScopedFact) { fs[3].ID = "" }),
	} {
		var v *facts.ValidationError
		if err := to.Restore(ctx, "app", "dave", "admin", fs); !errors.As(err, &v) {
			t.Errorf("restoring %s: %v, want a ValidationError", name, err)
		}
		if held, _ := to.UserFacts(ctx, "app", "dave"); len(held) != 0 {
			t.Errorf("a refused restore (%s) wrote %d versions", name, len(held))
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
