// Command testsummary reads `go test -json` (test2json) on standard input
// and prints what go test would print without -v, as it comes: each
// package's result line, the output of failing tests, build errors. At the
// end it names every skipped test and why, grouped by what the skip says
// of itself (its message's first word):
//
//	opt-in:       runs only against a real outside service whose address is given
//	n/a:          does not apply to this variant (a backend without the feature)
//	second pass:  measured in scripts/test's second pass, without the race detector
//
// Any other skip means a server or tool was missing: those are the ones to
// fix, and the summary says so. With -require-all such a skip fails the
// run (CI, where every suite must run).
//
// scripts/test names the passes it plans ("scripts/test: passes planned:
// race second portable") and says as each begins and ends; the summary
// says which failed and which never began, counts the tests a pass that
// never ran would have run ("second pass" skips) as not run, and exits 1
// when any test or pass failed or did not run.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ pkg, test, why string }

func main() {
	requireAll := flag.Bool("require-all", false, "fail when a test was skipped for want of a server or tool")
	flag.Parse()
	os.Exit(summarize(os.Stdin, os.Stdout, *requireAll))
}

// summarize reads r, writes the summary to w, and returns the exit code.
func summarize(r io.Reader, w io.Writer, requireAll bool) int {
	var (
		outputs = map[string][]string{} // a running test's output, by package and test
		skips   []skip
		failed  []string
		passed  int
	)
	p := &passes{state: map[string]string{}}
	in := bufio.NewScanner(r)
	in.Buffer(nil, 16<<20)
	for in.Scan() {
		line := in.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			p.read(string(line))
			fmt.Fprintln(w, string(line)) // not test2json: go's own message (a build failure, say), or scripts/test's
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "output", "build-output":
			if ev.Test == "" {
				if out := ev.Output; out != "PASS\n" && out != "testing: warning: no tests to run\n" && !strings.HasPrefix(out, "=== ") {
					fmt.Fprint(w, out)
				}
				continue
			}
			outputs[key] = append(outputs[key], ev.Output)
		case "pass", "fail", "skip":
			if ev.Test == "" {
				// A package that failed with no test of its own failing did
				// not build, or failed outside its tests: a failure all the
				// same.
				if ev.Action == "fail" && !slices.ContainsFunc(failed, func(f string) bool { return strings.HasSuffix(f, " ("+ev.Package+")") }) {
					failed = append(failed, "the package ("+ev.Package+"): it did not build, or failed outside its tests")
				}
				continue
			}
			switch ev.Action {
			case "pass":
				passed++
			case "fail":
				failed = append(failed, ev.Test+" ("+ev.Package+")")
				for _, out := range outputs[key] {
					fmt.Fprint(w, out)
				}
			case "skip":
				skips = append(skips, skip{ev.Package, ev.Test, reason(outputs[key])})
			}
			delete(outputs, key)
		}
	}
	missing := report(w, passed, failed, skips, p)
	if missing > 0 && requireAll || len(failed) > 0 || !p.whole() {
		return 1
	}
	return 0
}

// passes are scripts/test's passes: the planned ones in order, and how
// each went ("begins" while it runs, "ended", "failed").
type passes struct {
	planned []string
	state   map[string]string
}

// read takes in a line scripts/test wrote about its passes.
func (p *passes) read(line string) {
	if rest, ok := strings.CutPrefix(line, "scripts/test: passes planned: "); ok {
		p.planned = strings.Fields(rest)
	} else if rest, ok := strings.CutPrefix(line, "scripts/test: pass "); ok {
		if name, how, ok := strings.Cut(rest, ": "); ok {
			p.state[name] = how
		}
	}
}

// notRun are the planned passes that never began, or began and did not end.
func (p *passes) notRun() []string {
	var out []string
	for _, name := range p.planned {
		if how := p.state[name]; how != "ended" && how != "failed" {
			out = append(out, name)
		}
	}
	return out
}

func (p *passes) failed() []string {
	var out []string
	for _, name := range p.planned {
		if p.state[name] == "failed" {
			out = append(out, name)
		}
	}
	return out
}

// whole says whether every planned pass ran to its end, failing or not.
func (p *passes) whole() bool { return len(p.notRun()) == 0 }

// ran says whether a second pass (name "second", or "weaviate-second")
// ran for the tests skipped to be measured there.
func (p *passes) secondRan() bool {
	for name, how := range p.state {
		if strings.HasSuffix(name, "second") && (how == "ended" || how == "failed") {
			return true
		}
	}
	return !slices.ContainsFunc(p.planned, func(n string) bool { return strings.HasSuffix(n, "second") })
}

// reason is the skip's message: the last line the test logged.
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "===") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:max(strings.Index(l, ": "), 0)], ".go:") {
			return msg
		}
		return l
	}
	return "(no reason given)"
}

// report prints the summary and says how many tests were skipped for want
// of a server or tool.
func report(w io.Writer, passed int, failed []string, skips []skip, p *passes) int {
	groups := map[string][]skip{}
	for _, s := range skips {
		kind := "missing"
		for _, k := range []string{"opt-in", "n/a", "second pass"} {
			if strings.HasPrefix(s.why, k+":") {
				kind = k
			}
		}
		groups[kind] = append(groups[kind], s)
	}
	missing := groups["missing"]
	notRun := 0
	if !p.secondRan() { // what the race pass left to the second did not run at all
		notRun = len(groups["second pass"])
		delete(groups, "second pass")
	}
	fmt.Fprintf(w, "\nscripts/test: %d tests passed, %d failed, %d skipped", passed, len(failed), len(missing)+notRun)
	if len(p.planned) > 0 {
		fmt.Fprintf(w, "; passes: %d of %d ran", len(p.planned)-len(p.notRun()), len(p.planned))
	}
	fmt.Fprintln(w)
	for _, f := range failed {
		fmt.Fprintln(w, "  FAILED", f)
	}
	for _, name := range p.failed() {
		fmt.Fprintf(w, "  FAILED pass %s: the passes after it ran all the same\n", name)
	}
	for _, name := range p.notRun() {
		fmt.Fprintf(w, "  NOT RUN pass %s: every test it would have run did not run\n", name)
	}
	if notRun > 0 {
		fmt.Fprintf(w, "  NOT RUN %d tests left to the second pass, which did not run\n", notRun)
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  skipped for want of a server or tool (%d): install it, or see why below\n", len(missing))
		slices.SortFunc(missing, func(a, b skip) int { return strings.Compare(a.pkg+a.test, b.pkg+b.test) })
		for _, s := range missing {
			fmt.Fprintf(w, "    %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/hectormem/hector/"), s.test, s.why)
		}
	}
	if n := len(skips) - len(missing); n > 0 {
		fmt.Fprintf(w, "  not run here, by design (%d):\n", n)
	}
	for _, k := range []string{"opt-in", "second pass", "n/a"} {
		if n := len(groups[k]); n > 0 {
			names := map[string]bool{}
			for _, s := range groups[k] {
				names[strings.TrimSpace(strings.TrimPrefix(s.why, k+":"))] = true
			}
			fmt.Fprintf(w, "    %s (%d): %s\n", k, n, strings.Join(slices.Sorted(maps.Keys(names)), "; "))
		}
	}
	return len(groups["missing"])
}
