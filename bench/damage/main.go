// Command damage sweeps an index file with damage, as a bad disk would
// make it, and checks what hector serve then answers: it loads turns into
// a fresh data directory, stops the server, and for every page of the
// index file and some small overwrites at random places, damages a copy
// of the clean file, starts the server again and searches every turn by a
// word of its own. It counts results whose text the sessions do not hold
// (wrong), turns not found with nothing said (silent misses), 503s while
// the file is built again, and how long that took.
//
//	go build -o /tmp/hector ./cmd/hector
//	go run ./bench/damage -hector /tmp/hector
//
// -config names a configuration file (the zero configuration, hybrid with
// e5-small, without one). Everything runs on loopback, in a temporary
// directory removed at the end, and the run stops by itself.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const pageSize = 16 << 10 // the index file's page (pkg/index diskPageSize)

func main() {
	hector := flag.String("hector", "hector", "the hector binary")
	config := flag.String("config", "", "a configuration file for the server")
	turns := flag.Int("turns", 300, "how many turns to load, over two users")
	overwrites := flag.Int("overwrites", 30, "how many 64-byte overwrites at random places, besides every page")
	flag.Parse()
	root, err := os.MkdirTemp("", "hector-damage-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "data")
	serverLog, err := os.Create(filepath.Join(root, "serve.log"))
	if err != nil {
		log.Fatal(err)
	}
	s := &server{bin: *hector, config: *config, dir: dir, log: serverLog}

	s.start()
	held := map[string]string{} // event ID → text
	for i := range *turns {
		user := []string{"alice", "bob"}[i%2]
		if i < 2 {
			s.post("/v1/apps/demo/users/"+user+"/sessions", map[string]any{"session_id": "s"}, nil)
		}
		text := fmt.Sprintf("note %d: the word zq%04d is mine, and I like %s", i, i, []string{"tea", "chess", "rivers", "bread"}[i%4])
		var ev struct{ ID string }
		s.post("/v1/apps/demo/users/"+user+"/sessions/s/events",
			map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}}, &ev)
		held[ev.ID] = text
	}
	s.waitHealed()
	s.stop()

	file := filepath.Join(dir, "index")
	matches, _ := filepath.Glob(filepath.Join(file, "*.db"))
	if len(matches) != 1 {
		log.Fatalf("want one index file in %s, found %q", file, matches)
	}
	file = matches[0]
	clean, err := os.ReadFile(file)
	if err != nil {
		log.Fatal(err)
	}
	type damage struct {
		name  string
		at, n int
	}
	var cases []damage
	for p := range len(clean) / pageSize {
		cases = append(cases, damage{fmt.Sprintf("page %d", p+1), p * pageSize, pageSize})
	}
	rng := rand.New(rand.NewPCG(71, 4))
	for i := range *overwrites {
		cases = append(cases, damage{fmt.Sprintf("64 bytes #%d", i+1), rng.IntN(len(clean) - 64), 64})
	}
	fmt.Printf("damage: %d turns, an index file of %d pages; %d cases\n", *turns, len(clean)/pageSize, len(cases))
	var detected, wrong, silent, refused int
	var heals []time.Duration
	for _, c := range cases {
		for _, suffix := range []string{"", "-wal", "-shm", ".damaged", ".stale"} {
			os.Remove(file + suffix)
		}
		damaged := slices.Clone(clean)
		for i := c.at; i < c.at+c.n; i++ {
			damaged[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(file, damaged, 0o600); err != nil {
			log.Fatal(err)
		}
		began := time.Now()
		s.start()
		var first503 time.Time
		for pass := range 2 { // the second once healed
			for i := range *turns {
				user := []string{"alice", "bob"}[i%2]
				word := fmt.Sprintf("zq%04d", i)
				var found struct {
					Results []struct {
						EventID string `json:"event_id"`
						Content string `json:"content"`
					}
				}
				code := s.post("/v1/apps/demo/users/"+user+"/memory:search", map[string]any{"query": word, "limit": 3}, &found)
				if code == http.StatusServiceUnavailable && pass == 0 {
					refused++
					if first503.IsZero() {
						first503 = time.Now()
					}
					continue
				}
				if code != http.StatusOK {
					log.Fatalf("%s: search %q answered %d", c.name, word, code)
				}
				hit := false
				for _, r := range found.Results {
					if held[r.EventID] != r.Content {
						wrong++
						fmt.Printf("  %s: a result holds %q, the sessions %q\n", c.name, r.Content, held[r.EventID])
					}
					hit = hit || slices.Contains(strings.Fields(r.Content), word)
				}
				if !hit {
					silent++
					fmt.Printf("  %s: %s not found, and nothing said so\n", c.name, word)
				}
			}
			if pass == 0 {
				s.waitHealed()
			}
		}
		_, setAside := os.Stat(file + ".damaged")
		if !first503.IsZero() || setAside == nil {
			detected++
			heals = append(heals, time.Since(cmpOr(first503, began)))
		}
		s.stop()
	}
	fmt.Printf("detected %d of %d (the rest in pages no search read); wrong results %d; silent misses %d; 503 answers while healing %d\n",
		detected, len(cases), wrong, silent, refused)
	if len(heals) > 0 {
		slices.Sort(heals)
		fmt.Printf("healing, from the first 503 (or the start) to terms and vectors caught up: median %s, max %s\n",
			heals[len(heals)/2].Round(10*time.Millisecond), heals[len(heals)-1].Round(10*time.Millisecond))
	}
}

func cmpOr(t, otherwise time.Time) time.Time {
	if t.IsZero() {
		return otherwise
	}
	return t
}

// server runs hector serve on a data directory.
type server struct {
	bin, config, dir string
	log              io.Writer // the server's
	base             string
	cmd              *exec.Cmd
}

func (s *server) start() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"serve", "--data-dir", s.dir, "--address", addr}
	if s.config != "" {
		args = append(args, "--config", s.config)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Env = append(os.Environ(), "HECTOR_FACTS_KEY=")
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		panic(err)
	}
	s.base = "http://" + addr
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			panic("hector serve did not start")
		}
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
}

// waitHealed waits until the index has caught up, vectors too, and is not
// being built again.
func (s *server) waitHealed() {
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var st struct {
			Lag       int64  `json:"lag"`
			VectorLag int64  `json:"vector_lag"`
			Healing   string `json:"healing"`
		}
		if code := s.get("/v1/index", &st); code == http.StatusOK && st.Lag == 0 && st.VectorLag == 0 && st.Healing == "" {
			return
		}
		if time.Now().After(deadline) {
			log.Fatal("the index did not catch up in 5 minutes")
		}
	}
}

func (s *server) get(path string, out any) int {
	resp, err := http.Get(s.base + path)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

func (s *server) post(path string, body, out any) int {
	raw, _ := json.Marshal(body)
	resp, err := http.Post(s.base+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil && !errors.Is(err, io.EOF) {
			log.Fatalf("%s: %v", path, err)
		}
	}
	return resp.StatusCode
}
