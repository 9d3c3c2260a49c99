// Package artifactstest is the conformance suite every artifacts.Service runs.
package artifactstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
)

// Factory returns a new, empty store for one test, built with opts.
type Factory func(t *testing.T, opts ...artifacts.Option) artifacts.Service

// Run runs the whole suite against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, newStore Factory)
	}{
		{"SaveAndOpen", testSaveAndOpen},
		{"Versions", testVersions},
		{"CreatedAtKept", testCreatedAtKept},
		{"LargeAndEmptyContent", testLargeAndEmptyContent},
		{"MimeDetection", testMimeDetection},
		{"Scopes", testScopes},
		{"UserOwnWithoutSession", testUserOwnWithoutSession},
		{"Delete", testDelete},
		{"DeleteSession", testDeleteSession},
		{"SessionsOfAUser", testSessionsOfAUser},
		{"BadInputWritesNothing", testBadInputWritesNothing},
		{"TooLargeRefusedEarly", testTooLargeRefusedEarly},
		{"ConcurrentSaves", testConcurrentSaves},
		{"Handle", testHandle},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore) })
	}
}

func ref(session, name string) artifacts.Ref {
	return artifacts.Ref{AppName: "app", UserID: "alice", SessionID: session, Name: name}
}

func save(t *testing.T, s artifacts.Service, r artifacts.Ref, data []byte, mime string) *artifacts.Info {
	t.Helper()
	info, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: r, MimeType: mime, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("Save(%q): %v", r.Name, err)
	}
	return info
}

func open(t *testing.T, s artifacts.Service, r artifacts.Ref, version int64) (*artifacts.Info, []byte) {
	t.Helper()
	info, body, err := s.Open(t.Context(), r, version)
	if err != nil {
		t.Fatalf("Open(%q, %d): %v", r.Name, version, err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("reading %q: %v", r.Name, err)
	}
	return info, data
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func names(t *testing.T, s artifacts.Service, session string) []string {
	t.Helper()
	infos, err := s.List(t.Context(), "app", "alice", session)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, fmt.Sprintf("%s@%d", i.Name, i.Version))
	}
	return out
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want %v", what, err, target)
	}
}

func testSaveAndOpen(t *testing.T, newStore Factory) {
	s := newStore(t)
	data := []byte("quarterly report")
	before := time.Now().Add(-time.Second)
	info, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("s1", "report.txt"), MimeType: "text/plain",
		Metadata: map[string]any{"source": "agent", "pages": 3}, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "report.txt" || info.Version != 1 || info.Size != int64(len(data)) || info.SHA256 != digest(data) ||
		info.MimeType != "text/plain" || info.CreatedAt.Before(before) || info.Metadata["pages"] != 3.0 {
		t.Errorf("saved info = %+v", info)
	}
	got, content := open(t, s, ref("s1", "report.txt"), 0)
	if !bytes.Equal(content, data) {
		t.Errorf("content = %q, want %q", content, data)
	}
	if got.Version != 1 || got.SHA256 != info.SHA256 || got.Size != info.Size || !got.CreatedAt.Equal(info.CreatedAt) || got.Metadata["source"] != "agent" {
		t.Errorf("opened info = %+v, saved %+v", got, info)
	}
}

func testVersions(t *testing.T, newStore Factory) {
	s := newStore(t)
	r := ref("s1", "chart.png")
	for i := 1; i <= 3; i++ {
		if info := save(t, s, r, []byte(fmt.Sprintf("v%d", i)), "image/png"); info.Version != int64(i) {
			t.Fatalf("save %d got version %d", i, info.Version)
		}
	}
	if _, data := open(t, s, r, 2); string(data) != "v2" {
		t.Errorf("version 2 = %q", data)
	}
	if info, data := open(t, s, r, 0); string(data) != "v3" || info.Version != 3 {
		t.Errorf("latest = version %d %q", info.Version, data)
	}
	versions, err := s.Versions(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 3 {
		t.Fatalf("%d versions, want 3", len(versions))
	}
	for i, v := range versions {
		if v.Version != int64(i+1) || v.SHA256 != digest([]byte(fmt.Sprintf("v%d", i+1))) {
			t.Errorf("version %d = %+v", i+1, v)
		}
	}
	_, _, err = s.Open(t.Context(), r, 9)
	wantErr(t, "Open of a missing version", err, artifacts.ErrNotFound)
	_, _, err = s.Open(t.Context(), ref("s1", "nothing.txt"), 0)
	wantErr(t, "Open of a missing name", err, artifacts.ErrNotFound)
	_, err = s.Versions(t.Context(), ref("s1", "nothing.txt"))
	wantErr(t, "Versions of a missing name", err, artifacts.ErrNotFound)
}

// testCreatedAtKept: a version saved with its creation time (restoring an
// export) keeps it, to the nanosecond.
func testCreatedAtKept(t *testing.T, newStore Factory) {
	s := newStore(t)
	at := time.Date(2023, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CEST", 2*3600))
	info, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("s1", "old.txt"), Body: strings.NewReader("old"), CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := open(t, s, ref("s1", "old.txt"), 1)
	for _, v := range []*artifacts.Info{info, got} {
		if !v.CreatedAt.Equal(at) || v.CreatedAt.Location() != time.UTC {
			t.Errorf("created at %s, want %s in UTC", v.CreatedAt, at)
		}
	}
}

func testLargeAndEmptyContent(t *testing.T, newStore Factory) {
	s := newStore(t)
	large := make([]byte, 3<<20+17) // crosses chunk boundaries of every store
	for i := range large {
		large[i] = byte(i * 7 % 251)
	}
	info := save(t, s, ref("s1", "big.bin"), large, "application/octet-stream")
	if info.Size != int64(len(large)) || info.SHA256 != digest(large) {
		t.Errorf("big info = %+v", info)
	}
	if _, data := open(t, s, ref("s1", "big.bin"), 0); !bytes.Equal(data, large) {
		t.Errorf("big content differs: %d bytes back of %d", len(data), len(large))
	}
	info = save(t, s, ref("s1", "empty.txt"), nil, "text/plain")
	if _, data := open(t, s, ref("s1", "empty.txt"), 0); info.Size != 0 || len(data) != 0 || info.SHA256 != digest(nil) {
		t.Errorf("empty artifact: %+v, %d bytes", info, len(data))
	}
}

func testMimeDetection(t *testing.T, newStore Factory) {
	s := newStore(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...)
	if info := save(t, s, ref("s1", "a"), png, ""); info.MimeType != "image/png" {
		t.Errorf("detected %q for a PNG", info.MimeType)
	}
	if info := save(t, s, ref("s1", "b"), []byte("hello"), ""); info.MimeType != "text/plain; charset=utf-8" {
		t.Errorf("detected %q for text", info.MimeType)
	}
}

func testScopes(t *testing.T, newStore Factory) {
	s := newStore(t)
	save(t, s, ref("s1", "user:profile.json"), []byte(`{"v":1}`), "application/json")
	save(t, s, ref("s1", "notes.txt"), []byte("s1 notes"), "text/plain")
	save(t, s, ref("s2", "user:profile.json"), []byte(`{"v":2}`), "application/json") // the same user artifact, from another session
	save(t, s, ref("s2", "draft.txt"), []byte("s2 draft"), "text/plain")

	if _, data := open(t, s, ref("s1", "user:profile.json"), 0); string(data) != `{"v":2}` {
		t.Errorf("user artifact seen from s1 = %q, want the version saved from s2", data)
	}
	if got, want := strings.Join(names(t, s, "s1"), " "), "notes.txt@1 user:profile.json@2"; got != want {
		t.Errorf("s1 sees %q, want %q", got, want)
	}
	if got, want := strings.Join(names(t, s, "s2"), " "), "draft.txt@1 user:profile.json@2"; got != want {
		t.Errorf("s2 sees %q, want %q", got, want)
	}
	_, _, err := s.Open(t.Context(), ref("s2", "notes.txt"), 0)
	wantErr(t, "s2 opening s1's artifact", err, artifacts.ErrNotFound)
	for _, other := range []artifacts.Ref{
		{AppName: "app", UserID: "bob", SessionID: "s1", Name: "user:profile.json"},
		{AppName: "app", UserID: "bob", SessionID: "s1", Name: "notes.txt"},
		{AppName: "other", UserID: "alice", SessionID: "s1", Name: "user:profile.json"},
	} {
		_, _, err := s.Open(t.Context(), other, 0)
		wantErr(t, fmt.Sprintf("%s/%s opening %s", other.AppName, other.UserID, other.Name), err, artifacts.ErrNotFound)
		infos, err := s.List(t.Context(), other.AppName, other.UserID, other.SessionID)
		if err != nil || len(infos) != 0 {
			t.Errorf("%s/%s lists %d artifacts (%v), want none", other.AppName, other.UserID, len(infos), err)
		}
		wantErr(t, "deleting another's artifact", s.Delete(t.Context(), other), artifacts.ErrNotFound)
	}
}

// A user's own artifacts are reached without a session (SessionID ""):
// listed alone, opened, saved, deleted; a session's artifact is not, and
// DeleteSession of no session deletes nothing.
func testUserOwnWithoutSession(t *testing.T, newStore Factory) {
	s := newStore(t)
	save(t, s, ref("s1", "user:cv.pdf"), []byte("v1"), "application/pdf")
	save(t, s, ref("s1", "notes.txt"), []byte("s1 notes"), "text/plain")
	save(t, s, ref("", "user:cv.pdf"), []byte("v2"), "application/pdf")
	save(t, s, ref("", "user:photo.png"), []byte("png"), "image/png")
	if got, want := strings.Join(names(t, s, ""), " "), "user:cv.pdf@2 user:photo.png@1"; got != want {
		t.Errorf("the user's own: %q, want %q", got, want)
	}
	if _, data := open(t, s, ref("s9", "user:cv.pdf"), 0); string(data) != "v2" {
		t.Errorf("a user: artifact saved without a session, seen from one: %q", data)
	}
	if vs, err := s.Versions(t.Context(), ref("", "user:cv.pdf")); err != nil || len(vs) != 2 {
		t.Errorf("Versions without a session: %d, %v", len(vs), err)
	}
	_, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("", "draft.txt"), Body: strings.NewReader("x")})
	wantErr(t, "saving a session's artifact without its session", err, artifacts.ErrInvalidArgument)
	_, _, err = s.Open(t.Context(), ref("", "notes.txt"), 0)
	wantErr(t, "opening a session's artifact without its session", err, artifacts.ErrInvalidArgument)
	wantErr(t, "DeleteSession of no session", s.DeleteSession(t.Context(), "app", "alice", ""), artifacts.ErrInvalidArgument)
	if err := s.Delete(t.Context(), ref("", "user:photo.png")); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names(t, s, "s1"), " "), "notes.txt@1 user:cv.pdf@2"; got != want {
		t.Errorf("s1 after deleting the photo: %q, want %q", got, want)
	}
}

func testDelete(t *testing.T, newStore Factory) {
	s := newStore(t)
	for range 3 {
		save(t, s, ref("s1", "a.txt"), []byte("same bytes"), "text/plain")
	}
	save(t, s, ref("s1", "b.txt"), []byte("same bytes"), "text/plain")
	if err := s.Delete(t.Context(), ref("s1", "a.txt")); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Open(t.Context(), ref("s1", "a.txt"), 1)
	wantErr(t, "Open after Delete", err, artifacts.ErrNotFound)
	wantErr(t, "second Delete", s.Delete(t.Context(), ref("s1", "a.txt")), artifacts.ErrNotFound)
	if _, data := open(t, s, ref("s1", "b.txt"), 0); string(data) != "same bytes" {
		t.Errorf("deleting a.txt changed b.txt (same content): %q", data)
	}
	if info := save(t, s, ref("s1", "a.txt"), []byte("new"), "text/plain"); info.Version != 1 {
		t.Errorf("a name saved again after Delete starts at version %d, want 1", info.Version)
	}
}

func testDeleteSession(t *testing.T, newStore Factory) {
	s := newStore(t)
	save(t, s, ref("s1", "mine.txt"), []byte("1"), "text/plain")
	save(t, s, ref("s1", "user:kept.txt"), []byte("2"), "text/plain")
	save(t, s, ref("s2", "other.txt"), []byte("3"), "text/plain")
	if err := s.DeleteSession(t.Context(), "app", "alice", "s1"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(t, s, "s1"), " "); got != "user:kept.txt@1" {
		t.Errorf("after deleting s1 it sees %q, want only the user's artifact", got)
	}
	if got := strings.Join(names(t, s, "s2"), " "); got != "other.txt@1 user:kept.txt@1" {
		t.Errorf("deleting s1 changed s2: %q", got)
	}
	if err := s.DeleteSession(t.Context(), "app", "alice", "s1"); err != nil {
		t.Errorf("DeleteSession is not idempotent: %v", err)
	}
}

// Sessions names every session of the user holding artifacts of its own,
// and no other user's: erasure finds a deleted session's leftovers by it.
func testSessionsOfAUser(t *testing.T, newStore Factory) {
	s := newStore(t)
	ctx := t.Context()
	save(t, s, ref("s2", "b.txt"), []byte("1"), "text/plain")
	save(t, s, ref("s1", "a.txt"), []byte("2"), "text/plain")
	save(t, s, ref("s1", "a.txt"), []byte("3"), "text/plain")
	save(t, s, ref("s3", "user:own.txt"), []byte("4"), "text/plain")
	if _, err := s.Save(ctx, &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: "bob", SessionID: "s9", Name: "x.txt"},
		Body: strings.NewReader("5")}); err != nil {
		t.Fatal(err)
	}
	list := func() string {
		t.Helper()
		ids, err := s.Sessions(ctx, "app", "alice")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(ids, " ")
	}
	if got := list(); got != "s1 s2" {
		t.Errorf("Sessions = %q, want %q (a user: artifact belongs to no session, bob's are bob's)", got, "s1 s2")
	}
	if err := s.DeleteSession(ctx, "app", "alice", "s1"); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "s2" {
		t.Errorf("after deleting s1's artifacts Sessions = %q, want %q", got, "s2")
	}
	if err := s.Delete(ctx, ref("s2", "b.txt")); err != nil {
		t.Fatal(err)
	}
	if got := list(); got != "" {
		t.Errorf("after deleting s2's only artifact Sessions = %q, want none", got)
	}
	if _, err := s.Sessions(ctx, "app", ""); !errors.Is(err, artifacts.ErrInvalidArgument) {
		t.Errorf("Sessions of user \"\" = %v, want ErrInvalidArgument", err)
	}
}

func testBadInputWritesNothing(t *testing.T, newStore Factory) {
	s := newStore(t)
	bad := []string{"", "user:", strings.Repeat("n", 256), strings.Repeat("é", 256), "a/b", `a\b`, "..", "a..b", "nul\x00", "bell\a", "tab\tname", "\xff"}
	for _, name := range bad {
		_, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("s1", name), Body: strings.NewReader("x")})
		wantErr(t, fmt.Sprintf("Save(%q)", name), err, artifacts.ErrInvalidArgument)
		_, _, err = s.Open(t.Context(), ref("s1", name), 0)
		wantErr(t, fmt.Sprintf("Open(%q)", name), err, artifacts.ErrInvalidArgument)
	}
	// The limit is characters (what the SQL columns hold), not bytes.
	longest := []string{strings.Repeat("n", 255), strings.Repeat("é", 255), strings.Repeat("日", 255)}
	for _, name := range longest {
		if _, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("s1", name), Body: strings.NewReader("x")}); err != nil {
			t.Errorf("a name of 255 characters (%d bytes) was refused: %v", len(name), err)
		}
	}
	for what, req := range map[string]*artifacts.SaveRequest{
		"empty session": {Ref: artifacts.Ref{AppName: "app", UserID: "alice", Name: "x"}, Body: strings.NewReader("x")},
		"empty user":    {Ref: artifacts.Ref{AppName: "app", SessionID: "s1", Name: "x"}, Body: strings.NewReader("x")},
		"nil body":      {Ref: ref("s1", "x")},
		"NaN metadata":  {Ref: ref("s1", "x"), Metadata: map[string]any{"n": math.NaN()}, Body: strings.NewReader("x")},
	} {
		_, err := s.Save(t.Context(), req)
		wantErr(t, "Save with "+what, err, artifacts.ErrInvalidArgument)
	}
	_, _, err := s.Open(t.Context(), ref("s1", "x"), -1)
	wantErr(t, "Open of version -1", err, artifacts.ErrInvalidArgument)
	if got := names(t, s, "s1"); len(got) != len(longest) {
		t.Errorf("bad input wrote artifacts: %q", got)
	}
}

// endless is a reader of zeros that counts how much was read from it. It
// gives up at a cap, so a store that ignores its limit fails the test
// instead of filling the disk.
type endless struct{ read, cap int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.cap {
		return 0, errors.New("the store read on far past its size limit")
	}
	p = p[:min(int64(len(p)), e.cap-e.read)]
	clear(p)
	e.read += int64(len(p))
	return len(p), nil
}

func testTooLargeRefusedEarly(t *testing.T, newStore Factory) {
	const limit = 1 << 20
	s := newStore(t, artifacts.WithMaxSize(limit))
	body := &endless{cap: 16 * limit}
	_, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref("s1", "huge.bin"), Body: body})
	wantErr(t, "Save of an endless body", err, artifacts.ErrTooLarge)
	if body.read > 2*limit {
		t.Errorf("read %d bytes of an upload over the %d-byte limit before refusing it", body.read, limit)
	}
	if got := names(t, s, "s1"); len(got) != 0 {
		t.Errorf("an oversized upload left %q", got)
	}
	if info := save(t, s, ref("s1", "exact.bin"), make([]byte, limit), ""); info.Size != limit {
		t.Errorf("an artifact of exactly the limit: %+v", info)
	}
}

func testConcurrentSaves(t *testing.T, newStore Factory) {
	s := newStore(t)
	const writers, each = 8, 4
	r := ref("s1", "shared.txt")
	var mu sync.Mutex
	saved := map[int64]string{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				content := fmt.Sprintf("writer %d save %d", w, i)
				info, err := s.Save(context.Background(), &artifacts.SaveRequest{Ref: r, MimeType: "text/plain", Body: strings.NewReader(content)})
				if err != nil {
					t.Errorf("concurrent save: %v", err)
					return
				}
				mu.Lock()
				if prev, dup := saved[info.Version]; dup {
					t.Errorf("version %d given to both %q and %q", info.Version, prev, content)
				}
				saved[info.Version] = content
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	versions, err := s.Versions(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != writers*each || len(saved) != writers*each {
		t.Fatalf("%d versions stored, %d acknowledged; want %d", len(versions), len(saved), writers*each)
	}
	for v, content := range saved {
		if _, data := open(t, s, r, v); string(data) != content {
			t.Errorf("version %d holds %q, want %q", v, data, content)
		}
	}
}

func testHandle(t *testing.T, newStore Factory) {
	s := newStore(t)
	h := artifacts.NewHandle(t.Context(), s, "app", "alice", "s1")
	v, err := h.Save(&artifacts.Artifact{Name: "chart.png", MimeType: "image/png", Data: []byte("png bytes")})
	if err != nil || v != 1 {
		t.Fatalf("Save = %d, %v", v, err)
	}
	if v, _ := h.Save(&artifacts.Artifact{Name: "chart.png", MimeType: "image/png", Data: []byte("png v2")}); v != 2 {
		t.Errorf("second Save = version %d", v)
	}
	if _, err := h.Save(&artifacts.Artifact{Name: "user:avatar.png", Data: []byte("avatar")}); err != nil {
		t.Fatal(err)
	}
	a, err := h.Get("chart.png")
	if err != nil || string(a.Data) != "png v2" || a.Version != 2 || a.MimeType != "image/png" {
		t.Errorf("Get = %+v, %v", a, err)
	}
	if old, err := h.GetVersion("chart.png", 1); err != nil || string(old.Data) != "png bytes" {
		t.Errorf("GetVersion(1) = %+v, %v", old, err)
	}
	var all []string
	for a, err := range h.All() {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, fmt.Sprintf("%s@%d", a.Name, a.Version))
	}
	if got := strings.Join(all, " "); got != "chart.png@2 user:avatar.png@1" {
		t.Errorf("All = %q", got)
	}
	if d := h.Delta(); len(d) != 2 || d["chart.png"] != 2 || d["user:avatar.png"] != 1 {
		t.Errorf("Delta = %v, want chart.png:2 user:avatar.png:1", d)
	}
	if _, err := h.Get("missing"); !errors.Is(err, artifacts.ErrNotFound) {
		t.Errorf("Get(missing): %v", err)
	}
	if _, err := h.Save(&artifacts.Artifact{Name: "../escape"}); !errors.Is(err, artifacts.ErrInvalidArgument) {
		t.Errorf("Save(../escape): %v", err)
	}
}
