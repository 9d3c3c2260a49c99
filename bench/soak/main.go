// Command soak drives a running hector serve as a steady mix of clients
// would, for a fixed time at a fixed rate, and reports what it cost: the
// server's resident memory as the events pile up (and per stored event at
// the end), latency by operation, and every error. With -pprof it saves the
// server's heap profile at the start and the end (hector serve takes
// HECTOR_PPROF_ADDR), for `go tool pprof -diff_base`.
//
//	go build -o /tmp/hector ./cmd/hector
//	HECTOR_PPROF_ADDR=127.0.0.1:6060 /tmp/hector serve --data-dir /tmp/soak &
//	go run ./bench/soak -pid $! -rate 45 -duration 30m -pprof 127.0.0.1:6060 -out /tmp/soak-report
//
// Every request goes to the server given (loopback), and the run stops by
// itself.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "the server's base URL")
	pid := flag.Int("pid", 0, "the server's process ID, to read its resident memory")
	rate := flag.Float64("rate", 45, "requests per second")
	duration := flag.Duration("duration", 10*time.Minute, "how long to run")
	users := flag.Int("users", 8, "how many users the requests are spread over")
	pprofAddr := flag.String("pprof", "", "the server's HECTOR_PPROF_ADDR, to save heap profiles")
	out := flag.String("out", "", "a directory for the report and the profiles")
	exportEvery := flag.Int("export-every", 0, "make every n-th request an export of its user's archive (0: none)")
	flag.Parse()
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	s := &soak{base: strings.TrimRight(*server, "/"), users: *users, pprof: *pprofAddr, exportEvery: *exportEvery, latency: map[string][]time.Duration{}, errors: map[string]int{},
		sessions: make([]int, *users)}
	heap(*pprofAddr, *out, "heap-start.pb.gz")
	fmt.Printf("soak: %.0f requests/s for %s over %d users; RSS of pid %d\n", *rate, *duration, *users, *pid)
	fmt.Printf("%8s %10s %10s %10s %s\n", "elapsed", "events", "RSS MiB", "errors", memoryColumns)

	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	report := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	defer report.Stop()
	start := time.Now()
	end := time.After(*duration)
	sem := make(chan struct{}, 64) // bounds requests in flight if the server falls behind
loop:
	for n := 0; ; n++ {
		select {
		case <-end:
			break loop
		case <-report.C:
			s.line(time.Since(start), *pid)
		case <-tick.C:
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				s.one(n)
			})
		}
	}
	wg.Wait()
	s.line(time.Since(start), *pid)
	heap(*pprofAddr, *out, "heap-end.pb.gz")
	s.summary(*pid, *out)
}

type soak struct {
	base  string
	users int
	pprof string

	mu       sync.Mutex
	events   int
	sessions []int // each user's current session number
	// exportEvery: every n-th request exports its user's archive instead.
	exportEvery int
	latency     map[string][]time.Duration
	errors      map[string]int
	rss         []string
}

// one makes the n-th request: 6 in 10 append a 50-word message, 3 search,
// 1 reads a session's recent events; with -export-every, every n-th
// exports its user's archive instead.
func (s *soak) one(n int) {
	user := n % s.users
	s.mu.Lock()
	if n%(20*s.users) == user { // a new conversation every 20 turns a user
		s.sessions[user]++
	}
	sess := s.sessions[user]
	s.mu.Unlock()
	u := fmt.Sprintf("%s/v1/apps/soak/users/u%d", s.base, user)
	sid := fmt.Sprintf("s%d", sess)
	if s.exportEvery > 0 && n%s.exportEvery == s.exportEvery-1 {
		s.call("export", "GET", u+"/export", nil)
		return
	}
	switch n % 10 {
	case 0, 1, 2, 3, 4, 5:
		ev := map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": sentence(50)}}}}
		status := s.call("append", "POST", u+"/sessions/"+sid+"/events", ev)
		if status == http.StatusNotFound {
			s.call("create", "POST", u+"/sessions", map[string]any{"session_id": sid})
			status = s.call("append", "POST", u+"/sessions/"+sid+"/events", ev)
		}
		if status == http.StatusCreated {
			s.mu.Lock()
			s.events++
			s.mu.Unlock()
		}
	case 6, 7, 8:
		s.call("search", "POST", u+"/memory:search", map[string]any{"query": sentence(4), "limit": 5})
	default:
		s.call("get", "GET", u+"/sessions/"+sid+"?recent=20", nil)
	}
}

func (s *soak) call(op, method, url string, body any) int {
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	status := 0
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency[op] = append(s.latency[op], took)
	switch {
	case err != nil:
		s.errors[op+": "+err.Error()]++
	case status >= 400 && !(op == "append" && status == http.StatusNotFound) && !(op == "get" && status == http.StatusNotFound):
		s.errors[op+": "+strconv.Itoa(status)]++
	}
	return status
}

func (s *soak) line(elapsed time.Duration, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := 0
	for _, n := range s.errors {
		errs += n
	}
	l := fmt.Sprintf("%8s %10d %10.1f %10d %s", elapsed.Round(time.Second), s.events, rssMiB(pid), errs, memory(pid, s.pprof))
	s.rss = append(s.rss, l)
	fmt.Println(l)
}

func (s *soak) summary(pid int, out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "stored events: %d; RSS at the end %.1f MiB", s.events, rssMiB(pid))
	if s.events > 0 {
		fmt.Fprintf(&b, " (%.1f KiB per stored event, all of RSS)", rssMiB(pid)*1024/float64(s.events))
	}
	fmt.Fprintln(&b)
	for _, op := range slices.Sorted(maps.Keys(s.latency)) {
		d := s.latency[op]
		slices.Sort(d)
		fmt.Fprintf(&b, "%-7s n=%-7d p50 %-10s p99 %s\n", op, len(d), d[len(d)/2].Round(10*time.Microsecond), d[len(d)*99/100].Round(10*time.Microsecond))
	}
	for _, e := range slices.Sorted(maps.Keys(s.errors)) {
		fmt.Fprintf(&b, "error %s: %d\n", e, s.errors[e])
	}
	fmt.Print(b.String())
	if out != "" {
		os.WriteFile(filepath.Join(out, "report.txt"), []byte(strings.Join(s.rss, "\n")+"\n"+b.String()), 0o644)
	}
}

// rssMiB is a process's resident memory (VmRSS), 0 when it cannot be read.
func rssMiB(pid int) float64 { return procStatus(pid)["VmRSS"] / 1024 }

// procStatus is a process's /proc status lines measured in kB, by name;
// empty when it cannot be read.
func procStatus(pid int) map[string]float64 {
	kib := map[string]float64{}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return kib
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.HasSuffix(v, " kB") {
			kib[k], _ = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 64)
		}
	}
	return kib
}

// memoryColumns head what memory reports.
const memoryColumns = "  anon   file |  go-heap go-other |  not-go"

// memory splits a process's resident memory, in MiB: anonymous and
// file-backed (binary, mapped files) from /proc, and with the server's
// pprof address, what of the anonymous memory the Go runtime holds (heap
// in use, and the rest it has mapped and not released) and what it does
// not: memory the C code (SQLite) allocated.
func memory(pid int, pprofAddr string) string {
	kib := procStatus(pid)
	if len(kib) == 0 {
		return ""
	}
	anon, file := kib["RssAnon"]/1024, kib["RssFile"]/1024
	line := fmt.Sprintf("%6.0f %6.0f", anon, file)
	if pprofAddr == "" {
		return line
	}
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1")
	if err != nil {
		return line
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	stat := map[string]float64{}
	for _, l := range strings.Split(string(text), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "# "), " = "); ok {
			stat[k], _ = strconv.ParseFloat(strings.Fields(v + " 0")[0], 64)
		}
	}
	heapInUse := stat["HeapInuse"] / (1 << 20)
	goMapped := (stat["Sys"] - stat["HeapReleased"]) / (1 << 20)
	return line + fmt.Sprintf(" | %8.0f %8.0f | %7.0f", heapInUse, goMapped-heapInUse, anon-goMapped)
}

// heap saves the server's heap profile, after a collection.
func heap(addr, dir, name string) {
	if addr == "" || dir == "" {
		return
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		log.Printf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	os.WriteFile(filepath.Join(dir, name), raw, 0o644)
}

var words = strings.Fields(`the a my our trip to lisbon porto dog cat rex garden coffee morning train booking flight
hotel dinner friend sister brother birthday gift book reading music concert piano guitar work project deadline
meeting team manager report budget code review deploy server database index memory search weekend hike mountain
river lake beach summer winter snow rain umbrella jacket shoes recipe pasta bread cheese wine tea doctor appointment`)

func sentence(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[rand.IntN(len(words))]
	}
	return strings.Join(w, " ")
}
