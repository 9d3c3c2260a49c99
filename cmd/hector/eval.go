package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/eval"
	"github.com/hectormem/hector/pkg/session"
)

func evalCommand() *cobra.Command {
	var format, data, answers string
	var asJSON bool
	var questions, clients int
	var traceSlow time.Duration
	limits := eval.DefaultLimits
	var maxDataMB, maxLineMB int64
	cmd := &cobra.Command{
		Use:   "eval --format locomo|longmemeval|jsonl --data FILE",
		Short: "Measure how well an index configuration finds what answers questions about conversations",
		Long: `Measure retrieval on a labelled set of conversations: load them into the configuration's
stores (--config, else the zero configuration) in a fresh temporary data directory, append every
turn as the server does, wait until the index (vectors included) holds them, ask every question as
its own user, and print the figures overall and by category, with the time loading took and the
search latency. Databases and engines the configuration names outside the data directory
(PostgreSQL, Weaviate, Qdrant) are written to under a fresh app, and its sessions deleted after.

Formats (--data may be gzipped):
  locomo       LoCoMo's locomo10.json, one conversation's file, or a zip of them: turn-level
               hit@1, recall@5, recall@10, mrr@10, ndcg@5; categories 1-4 scored, adversarial
               questions (5) reported apart.
  longmemeval  LongMemEval's longmemeval_s, a JSON array or JSON lines: each question its own
               user with its haystack; recall_all@5/10 and ndcg_any@5/10 over sessions (ranked by
               their best turn), hit@1 and recall_any@5/10 over has_answer turns; by question type.
  jsonl        your own conversations, JSON lines of three kinds:
                 {"kind":"session","user":"alice","id":"trip","time":"2024-05-01T10:00:00Z"}
                 {"kind":"event","user":"alice","session":"trip","id":"e1","author":"alice","role":"user","text":"Book a flight to Lisbon"}
                 {"kind":"query","user":"alice","id":"q1","text":"Where am I flying?","category":"travel","answers":["e1"],"time":"2024-05-08T09:00:00Z"}
               scored as locomo is; a query's time (optional) is when it is asked.`,
		Example: `  hector eval --format locomo --data locomo10.json
  hector eval --format longmemeval --data longmemeval_s.jsonl.gz --config keyword.yaml --json
  hector eval --format jsonl --data my-conversations.jsonl --limit-questions 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxDataMB <= 0 || maxLineMB <= 0 || limits.MaxRecords <= 0 {
				return fmt.Errorf("--max-data-mb, --max-line-mb and --max-records take a number above 0")
			}
			limits.MaxBytes, limits.MaxLine = maxDataMB<<20, int(maxLineMB<<20)
			load, ok := map[string]func(string, []byte) (*eval.Dataset, error){
				"locomo": limits.LoadLoCoMo, "longmemeval": limits.LoadLongMemEval, "jsonl": limits.LoadJSONL}[format]
			if !ok {
				return fmt.Errorf("--format %q: give locomo, longmemeval or jsonl", format)
			}
			if data == "" {
				return fmt.Errorf("--data: name the file of conversations and questions")
			}
			if questions < 0 {
				return fmt.Errorf("--limit-questions %d: give a number of questions, or 0 for all", questions)
			}
			if clients < 1 {
				return fmt.Errorf("--clients %d: give how many clients ask at once, 1 or more", clients)
			}
			raw, err := limits.ReadFile(data)
			if err != nil {
				return fmt.Errorf("--data: %w", err)
			}
			d, err := load(data, raw)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o := eval.Options{Questions: questions, Clients: clients}
			if traceSlow < 0 {
				return fmt.Errorf("--trace-slow %s: give a duration such as 250ms, or 0 for no traces", traceSlow)
			}
			if traceSlow > 0 {
				traces, err := startSlowSearchTraces(traceSlow)
				if err != nil {
					return fmt.Errorf("--trace-slow: %w", err)
				}
				defer traces.stop()
				o.Searched = traces.searched
			}
			var written *eval.AnswerFile
			if answers != "" {
				if written, err = eval.CreateAnswerFile(answers); err != nil {
					return fmt.Errorf("--answers: %w", err)
				}
				o.Answered = written.Answered
			}
			report, err := runEval(ctx, cmd, d, o)
			if written != nil {
				if cerr := written.Close(); err == nil && cerr != nil {
					err = fmt.Errorf("--answers: %w", cerr)
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(report)
			}
			return report.WriteText(os.Stdout)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "locomo, longmemeval or jsonl")
	cmd.Flags().StringVar(&data, "data", "", "the file of conversations and questions (.gz is read as gzip)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (figures by category and overall, counts, timings, the index)")
	cmd.Flags().IntVar(&questions, "limit-questions", 0, "ask only N questions, taken in turn from each category, the first of each first (and load only their conversations)")
	cmd.Flags().StringVar(&answers, "answers", "", "write each question's figures and results, best first, to this file as JSON lines: which questions are missed, and what ranks above their answer")
	cmd.Flags().DurationVar(&traceSlow, "trace-slow", 0, "write a Go execution trace of the seconds before each search slower than this (the first three), to see what held it")
	cmd.Flags().IntVar(&clients, "clients", 1, "ask the questions from N clients at once: the search latency under load (the figures stay the same)")
	cmd.Flags().Int64Var(&maxDataMB, "max-data-mb", eval.DefaultLimits.MaxBytes>>20, "refuse data larger than this once decompressed (MiB)")
	cmd.Flags().Int64Var(&maxLineMB, "max-line-mb", int64(eval.DefaultLimits.MaxLine>>20), "refuse a JSON line longer than this (MiB)")
	cmd.Flags().IntVar(&limits.MaxRecords, "max-records", eval.DefaultLimits.MaxRecords, "refuse data of more lines, questions or conversations than this")
	return cmd
}

// runEval opens the configuration's stores on a fresh data directory and
// runs the evaluation there.
func runEval(ctx context.Context, cmd *cobra.Command, d *eval.Dataset, o eval.Options) (*eval.Report, error) {
	dir, err := os.MkdirTemp("", "hector-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, _ := cmd.Flags().GetString("config")
	cfg := config.Zero(config.Overrides{DataDir: dir})
	if path != "" {
		if cfg, err = config.Load(path, config.Overrides{DataDir: dir}); err != nil {
			return nil, err
		}
	}
	// Errors only: the warnings of a fresh data directory (a new facts key) are no news.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if err := serveProfiles(logger); err != nil {
		return nil, err
	}
	svcs, err := app.Open(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	defer svcs.Close()
	app := fmt.Sprintf("hector-eval-%d", time.Now().UnixNano())
	if shared(cfg) {
		defer forgetApp(svcs.Sessions, app, d)
	}
	bar := newBar(os.Stderr)
	o.App, o.Progress = app, bar.report
	report, err := eval.Run(ctx, d, svcs.Sessions, svcs.Index, o)
	bar.finish()
	if err != nil {
		return nil, err
	}
	report.Index = indexDescription(cfg)
	return report, nil
}

// shared reports whether the configuration keeps sessions or the index
// outside the data directory, where what the evaluation wrote stays.
func shared(cfg *config.Config) bool {
	srv := cfg.Server
	return srv.Index.External() || srv.Sessions.Backend == "sql" && cfg.Databases[srv.Sessions.Database].Driver != "sqlite"
}

// forgetApp deletes what the evaluation wrote to shared stores.
func forgetApp(sessions session.Service, app string, d *eval.Dataset) {
	ctx := context.Background()
	for _, u := range d.Users {
		for _, s := range u.Sessions {
			sessions.Delete(ctx, &session.DeleteRequest{AppName: app, UserID: u.ID, SessionID: s.ID})
		}
	}
}

func indexDescription(cfg *config.Config) string {
	for _, l := range cfg.Locations() {
		if l.What == "index" {
			what, _, _ := strings.Cut(l.Where, ", kept in ")
			return what
		}
	}
	return string(cfg.Server.Index.Type)
}

// bar shows how loading and indexing go: a bar on a terminal, a line every
// few seconds otherwise.
type bar struct {
	out      io.Writer
	terminal bool
	printed  time.Time
	stage    string
	start    time.Time
}

func newBar(out *os.File) *bar {
	fi, err := out.Stat()
	return &bar{out: out, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (b *bar) report(p eval.Progress) {
	if p.Stage != b.stage {
		b.finish()
		b.stage, b.start, b.printed = p.Stage, time.Now(), time.Time{}
	}
	interval := 5 * time.Second
	if b.terminal {
		interval = 100 * time.Millisecond
	}
	done := p.Done >= p.Total
	if time.Since(b.printed) < interval && !done {
		return
	}
	b.printed = time.Now()
	frac := float64(p.Done) / float64(max(p.Total, 1))
	what := map[string]string{"loading": "turns appended", "indexing": "changes embedded"}[p.Stage]
	line := fmt.Sprintf("%s: %3.0f%% %d of %d %s, %s", p.Stage, frac*100, p.Done, p.Total, what, time.Since(b.start).Round(time.Second))
	if b.terminal {
		n := int(frac * 30)
		fmt.Fprintf(b.out, "\r\033[K%s %s", strings.Repeat("█", n)+strings.Repeat("░", 30-n), line)
	} else {
		fmt.Fprintln(b.out, line)
	}
}

func (b *bar) finish() {
	if b.terminal && !b.printed.IsZero() {
		fmt.Fprintln(b.out)
	}
}

// slowSearchTraces keeps Go's flight recorder running and writes its
// window, the last seconds of every goroutine, when a search is slower than
// threshold: a search that stalls once in a hundred shows what it waited on
// (a lock, a system call, the collector, the scheduler) in go tool trace.
type slowSearchTraces struct {
	threshold time.Duration
	recorder  *trace.FlightRecorder
	mu        sync.Mutex
	written   int
}

const maxSlowSearchTraces = 3

func startSlowSearchTraces(threshold time.Duration) (*slowSearchTraces, error) {
	r := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2 * time.Second})
	if err := r.Start(); err != nil {
		return nil, err
	}
	return &slowSearchTraces{threshold: threshold, recorder: r}, nil
}

func (s *slowSearchTraces) searched(questionID string, took time.Duration) {
	if took < s.threshold {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == maxSlowSearchTraces {
		return
	}
	s.written++
	f, err := os.CreateTemp("", "hector-slow-search-*.trace")
	if err == nil {
		_, err = s.recorder.WriteTo(f)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "question %s took %s; its trace could not be written: %v\n", questionID, took.Round(time.Millisecond), err)
		return
	}
	fmt.Fprintf(os.Stderr, "question %s took %s: the seconds before it are in go tool trace %s\n", questionID, took.Round(time.Millisecond), f.Name())
}

func (s *slowSearchTraces) stop() { s.recorder.Stop() }
