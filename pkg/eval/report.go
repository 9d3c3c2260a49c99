package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report as a person reads it: what was loaded, how
// long it took, and a table of the figures by category.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d users, %d sessions, %d turns, %d questions\n", r.Format, r.Users, r.Sessions, r.Turns, r.Questions)
	fmt.Fprintf(w, "index: %s\n", r.Index)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	clients := ""
	if r.Clients > 1 {
		clients = fmt.Sprintf(" (%d clients at once)", r.Clients)
	}
	fmt.Fprintf(w, "ingest %.1f s, then %.1f s until the index held everything; search p50 %.2f ms, p99 %.2f ms%s, the slowest %.2f ms (question %s)\n\n",
		r.IngestSeconds, r.CatchUpSeconds, r.SearchMillis.P50, r.SearchMillis.P99, clients, r.SearchMillis.Max, r.SearchMillis.Slowest)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "category\tquestions\t%s\t\n", strings.Join(r.Metrics, "\t"))
	row := func(f Figures) {
		name := f.Name
		if f.Apart {
			name += " (apart)"
		}
		fmt.Fprintf(tw, "%s\t%d\t", name, f.Questions)
		for _, m := range r.Metrics {
			if v, ok := f.Values[m]; ok {
				fmt.Fprintf(tw, "%.3f\t", v)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	for _, c := range r.Categories {
		row(c)
	}
	row(r.Overall)
	return tw.Flush()
}
