package main

import (
	"strings"
	"testing"
)

// A run whose first pass failed and whose later passes never began is
// summarised as such: the failing test and pass, every pass that did not
// run, the tests left to the second pass counted as not run, exit 1. The
// same run whole and passing exits 0.
func TestTheSummaryNamesWhatDidNotRun(t *testing.T) {
	const plan = "scripts/test: passes planned: race second portable\n"
	race := `scripts/test: pass race: begins
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    x_test.go:9: second pass: measured without the race detector\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
`
	failing := `{"Action":"output","Package":"p","Test":"TestC","Output":"    x_test.go:3: append once the database is back: 503\n"}
{"Action":"fail","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}
scripts/test: pass race: failed
`
	for _, c := range []struct {
		name, in string
		code     int
		want     []string
	}{
		{"stopped after a failing pass", plan + race + failing, 1, []string{
			"1 tests passed, 1 failed, 1 skipped; passes: 1 of 3 ran",
			"FAILED TestC (p)", "FAILED pass race", "NOT RUN pass second", "NOT RUN pass portable",
			"NOT RUN 1 tests left to the second pass"}},
		{"a failing pass, the others run", plan + race + failing + "scripts/test: pass second: begins\n{\"Action\":\"pass\",\"Package\":\"p\",\"Test\":\"TestB\"}\nscripts/test: pass second: ended\n" +
			"scripts/test: pass portable: begins\nscripts/test: pass portable: ended\n", 1, []string{
			"2 tests passed, 1 failed, 0 skipped; passes: 3 of 3 ran", "FAILED pass race", "second pass (1)"}},
		{"whole", plan + race + "scripts/test: pass race: ended\nscripts/test: pass second: begins\nscripts/test: pass second: ended\n" +
			"scripts/test: pass portable: begins\nscripts/test: pass portable: ended\n", 0, []string{"1 tests passed, 0 failed, 0 skipped; passes: 3 of 3 ran"}},
	} {
		var out strings.Builder
		code := summarize(strings.NewReader(c.in), &out, true)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: the summary does not say %q:\n%s", c.name, w, out.String())
			}
		}
		if c.code == 0 && strings.Contains(out.String(), "NOT RUN") {
			t.Errorf("%s: %s", c.name, out.String())
		}
	}
}
