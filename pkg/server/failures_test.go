package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// A full disk fails every write alike: the answer says the disk is full,
// and the log says it once, not once a request (finding 8 of issue 71).
func TestAFullDiskIsSaidOnceAndPlainly(t *testing.T) {
	full := fmt.Errorf("session: appending: %w", syscall.ENOSPC)
	e := toAPIError(full)
	if e.status != 503 || !strings.Contains(e.message, "no space left on device") {
		t.Errorf("a full disk answers %d %q", e.status, e.message)
	}
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var f failureLog
	for range 3600 {
		f.log(logger, "POST /v1/x", e, full)
	}
	f.log(logger, "POST /v1/x", toAPIError(errors.New("boom")), errors.New("boom")) // another kind: its own line
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[1], "level=ERROR") {
		t.Errorf("3,600 refusals and one other failure logged as:\n%s", buf.String())
	}
}
