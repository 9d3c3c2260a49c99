// Package servertest runs a real Hector server on loopback for tests
// outside pkg/server: the configuration given, its stores opened, closed
// when the test ends.
package servertest

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/server"
)

// Start serves the configuration in yaml until t ends.
func Start(t testing.TB, yaml string) *httptest.Server {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svcs, err := app.Open(t.Context(), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(svcs, cfg, quiet)
	if err != nil {
		svcs.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		svcs.Close()
	})
	return hs
}
