package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
)

// The start-up lines name the agents the configuration hosts.
func TestStartUpLinesNameTheAgents(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(`
llms:
  fast: {base_url: "http://127.0.0.1:1/v1", model: small-1}
agents:
  support: {llm: fast, app: helpdesk}
  coach: {llm: fast}
`), config.Overrides{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printLocations(&out, cfg)
	want := "agents:         coach (app coach, model small-1), support (app helpdesk, model small-1); POST /v1/agents/{name}/run"
	if !strings.Contains(out.String(), want) {
		t.Errorf("start-up lines:\n%s\nwant a line %q", &out, want)
	}
}
