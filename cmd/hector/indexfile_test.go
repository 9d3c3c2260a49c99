package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An index directory or file that cannot be written stops the start with
// a sentence saying which and what to do, not SQLite's own words (finding
// 9 of issue 71). Run as another user than root, who writes anything.
func TestAnUnwritableIndexIsSaidPlainly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run hector as nobody beside files it cannot write")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(binary), 0o755) // nobody runs it
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o777)
	index := filepath.Join(dir, "index")
	if err := os.Mkdir(index, 0o555); err != nil {
		t.Fatal(err)
	}
	serve := func() string {
		cmd := exec.Command(binary, "serve", "--address", freeAddress(t))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HECTOR_DATA_DIR="+dir, "HECTOR_FACTS_KEY=", "HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("serve started beside an index it cannot write:\n%s", out)
		}
		return string(out)
	}
	if out := serve(); !strings.Contains(out, "the index's directory "+index+" cannot be written (permission denied): make it writable") {
		t.Errorf("a read-only index directory:\n%s", out)
	}
	os.Chmod(index, 0o777)
	file := filepath.Join(index, "hybrid.db")
	if err := os.WriteFile(file, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if out := serve(); !strings.Contains(out, "the index file "+file+" cannot be written (permission denied)") {
		t.Errorf("a read-only index file:\n%s", out)
	}
}
