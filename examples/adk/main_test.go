package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/server/servertest"

	hectoradk "github.com/hectormem/hector/integrations/adk"
)

const remembered = `assistant: You told me: "My sister Inês moved to Porto last spring."`

// The example as README runs it: Hector in process with its default
// configuration (hybrid search, the encoder in the binary), and against a
// server.
func TestTheAgentRemembersAcrossSessions(t *testing.T) {
	t.Run("InProcess", func(t *testing.T) {
		h, closeHector, err := openHector(t.Context(), "", "", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer closeHector()
		check(t, h)
	})
	t.Run("OverHTTP", func(t *testing.T) {
		hs := servertest.Start(t, "server: {data_dir: "+t.TempDir()+"}\n")
		h, _, err := openHector(t.Context(), hs.URL, "", "")
		if err != nil {
			t.Fatal(err)
		}
		check(t, h)
	})
}

// check runs the example twice on the same Hector, as a user running it
// again does: the second run's question is in memory too, and must not be
// taken for the answer.
func check(t *testing.T, h *hectoradk.Services) {
	t.Helper()
	for range 2 {
		var out bytes.Buffer
		if err := run(t.Context(), h, &out); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), remembered) {
			t.Errorf("the agent did not answer from the first session:\n%s", out.String())
		}
		if strings.Count(out.String(), "session ") != 2 {
			t.Errorf("want two sessions:\n%s", out.String())
		}
	}
}
