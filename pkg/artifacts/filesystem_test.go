package artifacts_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hectormem/hector/pkg/artifacts"
)

func newFilesystem(t *testing.T, dir string) artifacts.Service {
	t.Helper()
	s, err := artifacts.NewFilesystem(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return err
	})
	return out
}

func countPrefix(paths []string, prefix string) int {
	n := 0
	for _, p := range paths {
		if strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

func TestFilesystemStoresIdenticalBytesOnce(t *testing.T) {
	dir := t.TempDir()
	s := newFilesystem(t, dir)
	content := bytes.Repeat([]byte("same "), 1000)
	for _, name := range []string{"a.txt", "b.txt", "user:c.txt", "a.txt"} {
		if _, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: name}, Body: bytes.NewReader(content)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := countPrefix(files(t, dir), "blobs/"); n != 1 {
		t.Errorf("%d blob files for four saves of the same bytes, want 1", n)
	}
	// The blob goes only with the last version that uses it.
	for _, name := range []string{"a.txt", "b.txt", "user:c.txt"} {
		if n := countPrefix(files(t, dir), "blobs/"); n != 1 {
			t.Fatalf("blob gone before deleting %s", name)
		}
		if err := s.Delete(t.Context(), artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if left := files(t, dir); len(left) != 0 {
		t.Errorf("files left after deleting everything: %q", left)
	}
}

const crashChildEnv = "HECTOR_ARTIFACT_CRASH_DIR"

// TestFilesystemCrashMidWrite kills a process in the middle of saving a
// large artifact and checks that, reopened, the store shows nothing of it
// and keeps no leftover file.
func TestFilesystemCrashMidWrite(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		saveForever(dir)
		return
	}
	dir := t.TempDir()
	s := newFilesystem(t, dir)
	ref := artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "big.bin"}
	if _, err := s.Save(t.Context(), &artifacts.SaveRequest{Ref: ref, Body: strings.NewReader("version 1")}); err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestFilesystemCrashMidWrite$")
	child.Env = append(os.Environ(), crashChildEnv+"="+dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill() }) // however the test ends
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "writing" {
		t.Fatalf("child did not start writing: %q", lines.Text())
	}
	if tmp := countPrefix(files(t, dir), "tmp/"); tmp == 0 {
		t.Fatal("the child's upload is not in tmp/ while it writes")
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()

	s = newFilesystem(t, dir)
	versions, err := s.Versions(t.Context(), ref)
	if err != nil || len(versions) != 1 {
		t.Fatalf("after the crash: %d versions (%v), want only the first", len(versions), err)
	}
	_, body, err := s.Open(t.Context(), ref, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body)
	body.Close()
	if string(data) != "version 1" {
		t.Errorf("latest after the crash = %q", data)
	}
	if tmp := countPrefix(files(t, dir), "tmp/"); tmp != 0 {
		t.Errorf("%d partial uploads left in tmp/ after reopening", tmp)
	}
}

// saveForever is the child: it saves an artifact whose content does not end
// (until the 1 GiB limit, should the parent fail to kill it), announcing
// once a megabyte is on its way to disk.
func saveForever(dir string) {
	s, err := artifacts.NewFilesystem(dir, artifacts.WithMaxSize(1<<30))
	if err != nil {
		panic(err)
	}
	r, w := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for written := 0; ; written += len(chunk) {
			w.Write(chunk)
			if written == 1<<20 {
				os.Stdout.WriteString("writing\n")
			}
		}
	}()
	s.Save(context.Background(), &artifacts.SaveRequest{Ref: artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "big.bin"}, Body: r})
	panic("the endless save returned")
}
