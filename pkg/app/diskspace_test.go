package app

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
)

// A full disk answers pings and fails every write: readiness says so,
// naming what lives on it. (The threshold stands in for the full disk a
// test cannot make.)
func TestUnreadyOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	c, err := config.Parse("t.yaml", []byte(fmt.Sprintf("server:\n  data_dir: %s\n", dir)), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := Open(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Close()
	if unready := svcs.Unready(t.Context()); len(unready) != 0 {
		t.Fatalf("on a disk with room: %v", unready)
	}
	defer func(was uint64) { minFreeBytes = was }(minFreeBytes)
	minFreeBytes = math.MaxUint64
	unready := svcs.Unready(t.Context())
	for _, what := range []string{"server.data_dir", "databases.default"} {
		if err := unready[what]; err == nil || !strings.Contains(err.Error(), "is full") {
			t.Errorf("%s on a full disk: %v", what, err)
		}
	}
}
