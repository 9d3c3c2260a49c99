// Command scale measures how far one machine goes: it starts hector serve
// on a fresh data directory, appends turns over HTTP as writers would
// (turns of LongMemEval's haystacks, so their sizes and words are those
// of real conversations), and reports the load rate, the server's memory,
// the data directory's bytes by part, the time a restart takes to be
// ready, search latency for a random user (the first search after the
// restart, cold, and again, warm), and an append's latency while others
// search.
//
//	go build -o /tmp/hector ./cmd/hector
//	go run ./bench/scale -hector /tmp/hector -data longmemeval_s.json -turns 100000 -users 100
//
// -config names a configuration file for the server (the zero
// configuration, hybrid search with e5-small, without one). Everything runs on
// loopback, in a temporary directory removed at the end (-keep keeps it).
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	hector := flag.String("hector", "hector", "the hector binary")
	data := flag.String("data", "", "LongMemEval's longmemeval_s (JSON array or JSON lines, gzipped or not): the turns' texts")
	config := flag.String("config", "", "the server's configuration file (default: the zero configuration)")
	turns := flag.Int("turns", 100_000, "turns to append")
	users := flag.Int("users", 100, "users they are spread over")
	perSession := flag.Int("session-turns", 50, "turns in each session")
	writers := flag.Int("writers", 8, "clients appending at once")
	searches := flag.Int("searches", 200, "searches for each latency figure")
	keep := flag.Bool("keep", false, "keep the data directory")
	flag.Parse()
	if *data == "" {
		log.Fatal("scale: -data: give LongMemEval's longmemeval_s file, whose turns are appended")
	}
	texts, err := readTurns(*data)
	if err != nil {
		log.Fatalf("scale: -data: %v", err)
	}
	dir, err := os.MkdirTemp("", "hector-scale-")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	s := &server{bin: *hector, dir: dir, config: *config}
	if err := s.start(); err != nil {
		log.Fatal(err)
	}
	defer s.stop()
	fmt.Printf("scale: %d turns over %d users, %d a session, %d writers; data directory %s\n", *turns, *users, *perSession, *writers, dir)

	l := &load{s: s, texts: texts, turns: *turns, users: *users, perSession: *perSession}
	began := time.Now()
	if err := l.run(*writers); err != nil {
		log.Fatal(err)
	}
	took := time.Since(began)
	fmt.Printf("load: %d turns in %s, %.0f turns/s\n", *turns, took.Round(time.Second), float64(*turns)/took.Seconds())
	fmt.Printf("memory after loading: %s RSS\n", mib(s.rss()))
	s.waitIndexed()
	fmt.Printf("memory once indexed: %s RSS\n", mib(s.rss()))

	if err := s.restart(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("restart: ready in %s\n", s.readyAfter.Round(time.Millisecond))
	fmt.Printf("memory after the restart: %s RSS\n", mib(s.rss()))
	queries := l.queries(*searches)
	cold := s.searchLatency(queries)
	warm := s.searchLatency(queries)
	fmt.Printf("search, first after the restart: p50 %s, p99 %s, %s\n", pct(cold, 50), pct(cold, 99), slowest(cold, queries))
	fmt.Printf("search, again: p50 %s, p99 %s, %s\n", pct(warm, 50), pct(warm, 99), slowest(warm, queries))
	appends := l.appendWhileSearching(queries)
	fmt.Printf("append while 4 clients search: p50 %s, p99 %s\n", pct(appends, 50), pct(appends, 99))
	fmt.Printf("memory at the end: %s RSS\n", mib(s.rss()))
	fmt.Println("data directory:")
	for _, part := range parts(dir) {
		fmt.Printf("  %-28s %s\n", part.name, mib(part.bytes))
	}
}

// readTurns reads every turn's text of LongMemEval's haystacks.
func readTurns(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var in io.Reader = r
	if magic, _ := r.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		if in, err = gzip.NewReader(r); err != nil {
			return nil, err
		}
	}
	type question struct {
		Question string `json:"question"`
		Sessions [][]struct {
			Content string `json:"content"`
		} `json:"haystack_sessions"`
	}
	dec := json.NewDecoder(in)
	var texts []string
	add := func(q question) {
		for _, s := range q.Sessions {
			for _, t := range s {
				if strings.TrimSpace(t.Content) != "" {
					texts = append(texts, t.Content)
				}
			}
		}
	}
	if tok, err := dec.Token(); err == nil && tok == json.Delim('[') {
		for dec.More() {
			var q question
			if err := dec.Decode(&q); err != nil {
				return nil, err
			}
			add(q)
		}
	} else { // JSON lines: the first token was a line's opening brace
		rest := io.MultiReader(strings.NewReader("{"), dec.Buffered(), in)
		lines := json.NewDecoder(rest)
		for {
			var q question
			if err := lines.Decode(&q); err == io.EOF {
				break
			} else if err != nil {
				return nil, err
			}
			add(q)
		}
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("%s holds no haystack turn", path)
	}
	return texts, nil
}

// server is one hector serve process on the data directory.
type server struct {
	bin, dir, config string
	base             string
	cmd              *exec.Cmd
	readyAfter       time.Duration
}

func (s *server) start() error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := lis.Addr().String()
	lis.Close()
	args := []string{"serve", "--address", addr, "--data-dir", s.dir}
	if s.config != "" {
		args = append(args, "--config", s.config)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Env = append(os.Environ(), "HECTOR_FACTS_KEY=")
	logFile, err := os.OpenFile(filepath.Join(s.dir, "..", filepath.Base(s.dir)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.base = "http://" + addr
	for {
		resp, err := http.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.readyAfter = time.Since(began)
				return nil
			}
		}
		if s.cmd.ProcessState != nil || time.Since(began) > 10*time.Minute {
			return fmt.Errorf("hector serve did not become ready: see %s.log", s.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

func (s *server) restart() error {
	s.stop()
	return s.start()
}

// rss is the server's resident memory, in bytes.
func (s *server) rss() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// waitIndexed waits until the index has every change, vectors included
// (/v1/index says how far behind it is).
func (s *server) waitIndexed() {
	for began := time.Now(); time.Since(began) < time.Hour; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(s.base + "/v1/index")
		if err != nil {
			continue
		}
		var st struct {
			Lag       int `json:"lag"`
			VectorLag int `json:"vector_lag"`
		}
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if st.Lag == 0 && st.VectorLag == 0 {
			return
		}
	}
}

func (s *server) post(path string, body any) (time.Duration, error) {
	raw, _ := json.Marshal(body)
	began := time.Now()
	resp, err := http.Post(s.base+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return 0, fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return time.Since(began), nil
}

// searchLatency searches each query once, for its user, one at a time.
func (s *server) searchLatency(queries []query) []time.Duration {
	var out []time.Duration
	for _, q := range queries {
		d, err := s.post(userPath(q.user)+"/memory:search", map[string]any{"query": q.text})
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// load appends the turns, user by user, session by session.
type load struct {
	s                        *server
	texts                    []string
	turns, users, perSession int
}

func userPath(user int) string { return fmt.Sprintf("/v1/apps/scale/users/u%d", user) }

// run appends every turn with writers clients, each taking the next
// user's next session, and prints progress every 10 s.
func (l *load) run(writers int) error {
	perUser := (l.turns + l.users - 1) / l.users
	var next, done atomic.Int64
	var firstErr error
	var mu sync.Mutex
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		began := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				n := done.Load()
				fmt.Printf("  %d of %d turns appended, %.0f/s, %s RSS\n", n, l.turns, float64(n)/time.Since(began).Seconds(), mib(l.s.rss()))
			}
		}
	}()
	defer close(stop)
	sessions := (perUser + l.perSession - 1) / l.perSession
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				job := int(next.Add(1) - 1)
				user, session := job/sessions, job%sessions
				first := user*perUser + session*l.perSession
				if user >= l.users || first >= l.turns {
					return
				}
				n := min(l.perSession, perUser-session*l.perSession, l.turns-first)
				if n <= 0 {
					continue
				}
				if err := l.session(user, session, first, n); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				done.Add(int64(n))
			}
		})
	}
	wg.Wait()
	return firstErr
}

// session makes one session and appends its n turns, from turn first.
func (l *load) session(user, session, first, n int) error {
	u, id := userPath(user), fmt.Sprintf("s%d", session)
	if _, err := l.s.post(u+"/sessions", map[string]any{"session_id": id}); err != nil {
		return err
	}
	for i := range n {
		role := []string{"user", "assistant"}[i%2]
		text := l.texts[(first+i)%len(l.texts)]
		ev := map[string]any{"author": role, "message": map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "text": text}}}}
		if _, err := l.s.post(u+"/sessions/"+id+"/events", ev); err != nil {
			return err
		}
	}
	return nil
}

type query struct {
	user int
	text string
}

// queries are n searches, each for a random user, of five words of a turn
// that user holds.
func (l *load) queries(n int) []query {
	rng := rand.New(rand.NewPCG(1, 2))
	perUser := (l.turns + l.users - 1) / l.users
	var out []query
	for range n {
		user := rng.IntN(l.users)
		words := strings.Fields(l.texts[(user*perUser+rng.IntN(perUser))%len(l.texts)])
		from := rng.IntN(max(1, len(words)-5))
		out = append(out, query{user, strings.Join(words[from:min(len(words), from+5)], " ")})
	}
	return out
}

// appendWhileSearching times appends to a session of its own while four
// clients search.
func (l *load) appendWhileSearching(queries []query) []time.Duration {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := c; ; i = (i + 4) % len(queries) {
				select {
				case <-stop:
					return
				default:
				}
				l.s.post(userPath(queries[i].user)+"/memory:search", map[string]any{"query": queries[i].text})
			}
		})
	}
	u := userPath(0)
	if _, err := l.s.post(u+"/sessions", map[string]any{"session_id": "timed"}); err != nil {
		log.Fatal(err)
	}
	var out []time.Duration
	for i := range 200 {
		ev := map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": l.texts[i%len(l.texts)]}}}}
		d, err := l.s.post(u+"/sessions/timed/events", ev)
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, d)
	}
	close(stop)
	wg.Wait()
	return out
}

type part struct {
	name  string
	bytes int64
}

// parts are the data directory's entries with their sizes, largest first.
func parts(dir string) []part {
	entries, _ := os.ReadDir(dir)
	var out []part
	for _, e := range entries {
		var n int64
		filepath.Walk(filepath.Join(dir, e.Name()), func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				n += fi.Size()
			}
			return nil
		})
		out = append(out, part{e.Name(), n})
	}
	slices.SortFunc(out, func(a, b part) int { return cmp.Compare(b.bytes, a.bytes) })
	return out
}

func pct(ds []time.Duration, p int) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond).String()
}

// slowest names the slowest search and its place in the run: a slow first
// search is a warm-up, one later on a stall.
func slowest(ds []time.Duration, queries []query) string {
	if len(ds) == 0 {
		return "none"
	}
	i := 0
	for j, d := range ds {
		if d > ds[i] {
			i = j
		}
	}
	return fmt.Sprintf("the slowest %s (search %d of %d, user u%d)", ds[i].Round(10*time.Microsecond), i+1, len(ds), queries[i].user)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
