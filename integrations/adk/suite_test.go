package hectoradk_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"

	"github.com/hectormem/hector/integrations/adk"
	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/server/servertest"
)

// configYAML is `hector serve`'s default (sessions and artifacts in SQLite
// under the data directory) with a keyword index, which needs no encoder.
func configYAML(dir string) string {
	return fmt.Sprintf("server:\n  data_dir: %s\n  index: {type: keyword}\n  limits: {requests_per_second: 100000, burst: 100000}\n", dir)
}

// inProcess opens a fresh Hector's stores in this process.
func inProcess(t *testing.T) *hectoradk.Services {
	t.Helper()
	return hectoradk.New(openHector(t, configYAML(t.TempDir())))
}

func openHector(t *testing.T, yaml string) *app.Services {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := app.Open(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// overHTTP starts a fresh Hector server on loopback and connects to it.
func overHTTP(t *testing.T) *hectoradk.Services {
	t.Helper()
	hs := servertest.Start(t, configYAML(t.TempDir()))
	s, err := hectoradk.Connect(hs.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var modes = []struct {
	name string
	open func(t *testing.T) *hectoradk.Services
}{{"InProcess", inProcess}, {"OverHTTP", overHTTP}}

// TestADKSessionSuite runs ADK's own suite of a session.Service, whole:
// Hector takes the session IDs its users give and keeps the event IDs
// ADK gives, so no option is turned off.
func TestADKSessionSuite(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
				func(t *testing.T) session.Service { return m.open(t).Session })
		})
	}
}
