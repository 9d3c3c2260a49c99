package eval

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every limit refuses what is past it with an error naming the file, the
// limit and the flag that raises it, and takes what is within it.
func TestLimits(t *testing.T) {
	small := Limits{MaxBytes: 1 << 20, MaxLine: 1 << 20, MaxRecords: 10}
	dir := t.TempDir()
	write := func(name string, raw []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var bomb bytes.Buffer // 64 MiB of zeros in 64 KiB
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	session := `{"kind":"session","user":"u","id":"s"}` + "\n"
	event := func(i int) string {
		return fmt.Sprintf(`{"kind":"event","user":"u","session":"s","id":"e%d","text":"turn %d"}`+"\n", i, i)
	}
	var ten strings.Builder
	ten.WriteString(session)
	for i := range 9 {
		ten.WriteString(event(i))
	}
	var zipped bytes.Buffer
	zz := zip.NewWriter(&zipped)
	f, _ := zz.Create("a.json")
	f.Write(bytes.Repeat([]byte(" "), 2<<20))
	zz.Close()

	for _, c := range []struct {
		name string
		load func() error
		want string // "" when it is within the limits
	}{
		{"gzip bomb", func() error { _, err := small.ReadFile(write("bomb.jsonl.gz", bomb.Bytes())); return err }, "more than 1 MiB of data once decompressed, the limit: raise it with --max-data-mb"},
		{"endless file", func() error { _, err := small.ReadFile("/dev/zero"); return err }, "/dev/zero holds more than 1 MiB"},
		{"a gzipped file within", func() error {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write([]byte(ten.String()))
			zw.Close()
			raw, err := small.ReadFile(write("ten.jsonl.gz", b.Bytes()))
			if err == nil && string(raw) != ten.String() {
				err = fmt.Errorf("read %q", raw)
			}
			return err
		}, ""},
		{"long line", func() error {
			_, err := small.LoadJSONL("long.jsonl", []byte(session+`{"kind":"event","text":"`+strings.Repeat("x", 1<<20)+`"}`+"\n"))
			return err
		}, "long.jsonl, line 2: longer than 1 MiB, the limit: raise it with --max-line-mb"},
		{"ten records", func() error { _, err := small.LoadJSONL("ten.jsonl", []byte(ten.String())); return err }, "no question to score"},
		{"eleven records", func() error {
			_, err := small.LoadJSONL("eleven.jsonl", []byte(ten.String()+event(10)))
			return err
		}, "eleven.jsonl holds more than 10 records (lines, questions or conversations), the limit: raise it with --max-records"},
		{"questions", func() error {
			_, err := small.LoadLongMemEval("lme.json", []byte("["+strings.Repeat(`{},`, 10)+`{}]`))
			return err
		}, "lme.json holds more than 10 records"},
		{"zip bomb", func() error { _, err := small.LoadLoCoMo("locomo.zip", zipped.Bytes()); return err }, "locomo.zip holds more than"},
	} {
		err := c.load()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
