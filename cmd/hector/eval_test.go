package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A user's own conversations in the jsonl format, end to end through the
// binary: the figures as JSON and as a table, and a bad file refused with
// the line that is wrong.
func TestEvalOnAUsersOwnSet(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "mine.jsonl")
	os.WriteFile(data, []byte(`{"kind":"session","user":"alice","id":"trip","time":"2024-05-01T10:00:00Z"}
{"kind":"event","user":"alice","session":"trip","id":"e1","author":"alice","text":"Book a flight to Lisbon for May"}
{"kind":"event","user":"alice","session":"trip","id":"e2","role":"assistant","text":"Booked: TAP 1234, 120 euros"}
{"kind":"query","user":"alice","id":"q1","text":"Where am I flying in May?","category":"travel","answers":["e1"]}
{"kind":"query","user":"alice","id":"q2","text":"How many euros was it?","category":"money","answers":["e2"]}
`), 0o600)
	config := filepath.Join(dir, "keyword.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n"), 0o600)
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, _, err := run("eval", "--format", "jsonl", "--data", data, "--config", config, "--json")
	if err != nil {
		t.Fatalf("hector eval --json: %v\n%s", err, out)
	}
	var r struct {
		Format, Index string
		Questions     int
		Overall       struct{ Values map[string]float64 }
		Categories    []struct{ Name string }
		SearchMS      struct{ P50 float64 } `json:"search_ms"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r.Format != "jsonl" || r.Index != "keyword" || r.Questions != 2 || r.Overall.Values["hit@1"] != 1 || len(r.Categories) != 2 || r.SearchMS.P50 <= 0 {
		t.Errorf("the JSON report: %s", out)
	}
	answers := filepath.Join(t.TempDir(), "answers.jsonl")
	if _, stderr, err := run("eval", "--format", "jsonl", "--data", data, "--config", config, "--answers", answers); err != nil {
		t.Fatalf("hector eval --answers: %v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(answers)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]struct {
		Question string
		Turns    []string           `json:"answer_turns"`
		Figures  map[string]float64 `json:"figures"`
		Results  []struct {
			EventID string `json:"event_id"`
			Content string
		}
	}{}
	for line := range strings.Lines(string(raw)) {
		var a struct {
			ID string
		}
		json.Unmarshal([]byte(line), &a)
		v := byID[a.ID]
		json.Unmarshal([]byte(line), &v)
		byID[a.ID] = v
	}
	if q1 := byID["q1"]; len(byID) != 2 || q1.Question != "Where am I flying in May?" || len(q1.Turns) != 1 || q1.Figures["hit@1"] != 1 ||
		len(q1.Results) == 0 || q1.Results[0].EventID != "e1" || !strings.Contains(q1.Results[0].Content, "Lisbon") {
		t.Errorf("--answers wrote %s", raw)
	}
	out, progress, err := run("eval", "--format", "jsonl", "--data", data, "--config", config)
	if err != nil || !strings.Contains(out, "hit@1") || !strings.Contains(out, "travel") || !strings.Contains(progress, "loading: 100%") {
		t.Errorf("the text report: %v\n%s\n%s", err, out, progress)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("hector eval left files in the working directory: %v", entries)
	}

	os.WriteFile(data, []byte(`{"kind":"session","user":"alice","id":"trip"}`+"\n{oops\n"), 0o600)
	if _, stderr, err := run("eval", "--format", "jsonl", "--data", data); err == nil || !strings.Contains(stderr, "mine.jsonl, line 2") {
		t.Errorf("a bad file: %v %s", err, stderr)
	}
	if _, stderr, err := run("eval", "--format", "csv", "--data", data); err == nil || !strings.Contains(stderr, "locomo, longmemeval or jsonl") {
		t.Errorf("an unknown format: %v %s", err, stderr)
	}
	if _, stderr, err := run("eval", "--format", "jsonl", "--data", data, "--clients", "0"); err == nil || !strings.Contains(stderr, "--clients 0") {
		t.Errorf("--clients 0: err %v, stderr %q", err, stderr)
	}
}

// --trace-slow writes an execution trace for each search slower than it
// (every search is slower than a nanosecond), which go tool trace reads,
// and says where; a negative duration is refused.
func TestEvalTracesSlowSearches(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	data := filepath.Join(dir, "mine.jsonl")
	os.WriteFile(data, []byte(`{"kind":"session","user":"alice","id":"trip"}
{"kind":"event","user":"alice","session":"trip","id":"e1","author":"alice","text":"Book a flight to Lisbon for May"}
{"kind":"query","user":"alice","id":"q1","text":"Where am I flying in May?","answers":["e1"]}
{"kind":"query","user":"alice","id":"q2","text":"Which city?","answers":["e1"]}
`), 0o600)
	config := filepath.Join(dir, "keyword.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n"), 0o600)
	cmd := exec.Command(binary, "eval", "--format", "jsonl", "--data", data, "--config", config, "--trace-slow", "1ns")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hector eval --trace-slow 1ns: %v\n%s", err, out)
	}
	traces, _ := filepath.Glob(filepath.Join(tmp, "hector-slow-search-*.trace"))
	if len(traces) != 2 || strings.Count(string(out), "go tool trace "+tmp) != 2 {
		t.Fatalf("traces %v for 2 questions; output:\n%s", traces, out)
	}
	parsed, err := exec.Command("go", "tool", "trace", "-d=parsed", traces[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(parsed), "StateTransition") {
		t.Errorf("go tool trace cannot read %s: %v\n%.500s", traces[0], err, parsed)
	}

	cmd = exec.Command(binary, "eval", "--format", "jsonl", "--data", data, "--trace-slow", "-1s")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--trace-slow -1s") {
		t.Errorf("--trace-slow -1s: %v\n%s", err, out)
	}
}
