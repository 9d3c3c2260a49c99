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
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
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
	var (
		outputs = map[string][]string{} // a running test's output, by package and test
		skips   []skip
		failed  []string
		passed  int
	)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	for in.Scan() {
		line := in.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Println(string(line)) // not test2json: go's own message (a build failure, say)
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "output", "build-output":
			if ev.Test == "" {
				if out := ev.Output; out != "PASS\n" && out != "testing: warning: no tests to run\n" && !strings.HasPrefix(out, "=== ") {
					fmt.Print(out)
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
					fmt.Print(out)
				}
			case "skip":
				skips = append(skips, skip{ev.Package, ev.Test, reason(outputs[key])})
			}
			delete(outputs, key)
		}
	}
	if missing := report(passed, failed, skips); missing > 0 && *requireAll {
		os.Exit(1)
	}
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
func report(passed int, failed []string, skips []skip) int {
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
	fmt.Printf("\nscripts/test: %d tests passed, %d failed, %d skipped\n", passed, len(failed), len(missing))
	for _, f := range failed {
		fmt.Println("  FAILED", f)
	}
	if len(missing) > 0 {
		fmt.Printf("  skipped for want of a server or tool (%d): install it, or see why below\n", len(missing))
		slices.SortFunc(missing, func(a, b skip) int { return strings.Compare(a.pkg+a.test, b.pkg+b.test) })
		for _, s := range missing {
			fmt.Printf("    %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/hectormem/hector/"), s.test, s.why)
		}
	}
	if n := len(skips) - len(missing); n > 0 {
		fmt.Printf("  not run here, by design (%d):\n", n)
	}
	for _, k := range []string{"opt-in", "second pass", "n/a"} {
		if n := len(groups[k]); n > 0 {
			names := map[string]bool{}
			for _, s := range groups[k] {
				names[strings.TrimSpace(strings.TrimPrefix(s.why, k+":"))] = true
			}
			fmt.Printf("    %s (%d): %s\n", k, n, strings.Join(slices.Sorted(maps.Keys(names)), "; "))
		}
	}
	return len(groups["missing"])
}
