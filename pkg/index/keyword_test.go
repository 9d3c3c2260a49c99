package index_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
)

func TestKeyword(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestKeywordStemmed(t *testing.T) {
	indextest.Run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(append(opts, index.WithStemming(true))...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

// A snapshot in the format of an older Hector is not read: the index says
// so and is built again from the change feed, without a rebuild by hand.
func TestOlderSnapshotIsBuiltAgainFromTheFeed(t *testing.T) {
	sessions := session.NewInMemoryService()
	resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"})
	if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the zeppelin leaves at noon")}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keyword.snapshot")
	if err := os.WriteFile(path, []byte("HECTOR-INDEX-1\nan index of the old format, checksum and all"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	idx, err := index.NewKeyword(index.WithSnapshot(path), index.WithSessions(sessions), index.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "older Hector") {
		t.Errorf("the old snapshot was not logged as such: %s", logs.String())
	}
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "zeppelin", AppName: "a", UserID: "u"})
	if err != nil || len(rs.Results) != 1 {
		t.Fatalf("after starting on an old snapshot: %+v, %v; want the event, from the feed", rs, err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(raw, []byte("HECTOR-INDEX-2\n")) {
		t.Errorf("closing did not write the snapshot anew: %.20q, %v", raw, err)
	}
}
