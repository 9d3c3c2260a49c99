package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/index"
)

func indexCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "index", Short: "Operate the search index"}
	var appName, user, serverURL string
	var all bool
	rebuild := &cobra.Command{
		Use:   "rebuild",
		Short: "Rebuild the search index from the sessions: --app A [--user U], or --all",
		Long: `Rebuild the search index from the session store, the source of truth. The new index is
built beside the old one and swapped in when complete; Ctrl-C leaves the old index intact.

If a running server owns the index (an in-process index in the same data directory), this
command refuses: ask the server instead with --server URL (and an admin key in
$HECTOR_API_KEY), which rebuilds inside the server.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !all && appName == "" {
				return errors.New("say what to rebuild: --app A, --app A --user U, or --all")
			}
			if all && (appName != "" || user != "") {
				return errors.New("--all rebuilds everything: leave out --app and --user")
			}
			if user != "" && appName == "" {
				return errors.New("--user needs --app")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if serverURL != "" {
				return rebuildOnServer(ctx, serverURL, appName, user)
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return rebuildHere(ctx, cfg, appName, user)
		},
	}
	rebuild.Flags().StringVar(&appName, "app", "", "rebuild this app")
	rebuild.Flags().StringVar(&user, "user", "", "rebuild only this user of --app")
	rebuild.Flags().BoolVar(&all, "all", false, "rebuild every app and user")
	rebuild.Flags().StringVar(&serverURL, "server", "", "ask the server at this URL to rebuild (admin key in $HECTOR_API_KEY)")
	cmd.AddCommand(rebuild)
	return cmd
}

func rebuildHere(ctx context.Context, cfg *config.Config, appName, user string) error {
	// Opening a SQLite file that is not there would make an empty one, and
	// "rebuild" an empty index from it: a mistyped --data-dir.
	if db, ok := cfg.Databases[cfg.Server.Sessions.Database]; ok && cfg.Server.Sessions.Backend == "sql" && db.Driver == "sqlite" {
		if _, err := os.Stat(db.DSN); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("there are no sessions to rebuild from: %s does not exist (check --data-dir, $HECTOR_DATA_DIR or the configuration)", db.DSN)
		}
	}
	// What the data directory alone holds belongs to one process at a time;
	// an index in an external store is rebuilt beside the live one while
	// servers keep using it.
	release, err := lockDataDir(cfg, "hector index rebuild")
	if err != nil {
		return err
	}
	defer release()
	printLocations(os.Stderr, cfg)
	logger := newLogger()
	svcs, err := app.Open(ctx, cfg, logger, app.WithoutCatchUp())
	if err != nil {
		return err
	}
	defer svcs.Close()
	p := newProgress(os.Stderr)
	err = svcs.Index.Rebuild(index.WithRebuildProgress(ctx, p.report), svcs.Sessions, appName, user)
	p.finish()
	if err != nil {
		return err
	}
	fmt.Printf("index rebuilt: %d events read, %d documents indexed, in %s\n", p.last.Events, p.last.Indexed, time.Since(p.start).Round(time.Millisecond))
	return nil
}

// progress draws a bar on a terminal and writes a line every few seconds otherwise.
type progress struct {
	out      io.Writer
	terminal bool
	start    time.Time
	printed  time.Time
	last     index.Progress
}

func newProgress(out *os.File) *progress {
	fi, err := out.Stat()
	return &progress{out: out, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0, start: time.Now()}
}

func (p *progress) report(pr index.Progress) {
	p.last = pr
	interval := 5 * time.Second
	if p.terminal {
		interval = 100 * time.Millisecond
	}
	if time.Since(p.printed) < interval && !pr.Done {
		return
	}
	p.printed = time.Now()
	elapsed := time.Since(p.start).Seconds()
	rate := float64(pr.Events) / max(elapsed, 1e-9)
	line := fmt.Sprintf("%d sessions, %d events, %.0f events/s", pr.Sessions, pr.Events, rate)
	if pr.Head > 0 {
		frac := min(float64(pr.Cursor)/float64(pr.Head), 1)
		eta := time.Duration(elapsed * (1 - frac) / max(frac, 1e-9) * float64(time.Second)).Round(time.Second)
		line = fmt.Sprintf("%3.0f%% %s, ETA %s", frac*100, line, eta)
		if p.terminal {
			bar := strings.Repeat("█", int(frac*30)) + strings.Repeat("░", 30-int(frac*30))
			line = bar + " " + line
		}
	}
	if p.terminal {
		fmt.Fprintf(p.out, "\r\033[K%s", line)
	} else {
		fmt.Fprintf(p.out, "rebuild: %s\n", line)
	}
}

func (p *progress) finish() {
	if p.terminal && !p.printed.IsZero() {
		fmt.Fprintln(p.out)
	}
}

// callServer sends one request to a running server, with the key in
// $HECTOR_API_KEY, and decodes its JSON answer into out; an answer that is
// not a success is an error with the server's message.
func callServer(ctx context.Context, method, url string, body []byte, out any) error {
	resp, err := sendToServer(ctx, method, url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// sendToServer makes a request with the key in $HECTOR_API_KEY and returns
// the response of a success, whose body the caller closes; a failure is
// the server's message.
func sendToServer(ctx context.Context, method, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key := os.Getenv("HECTOR_API_KEY"); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", url, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var failed struct {
			Error struct{ Message string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&failed)
		return nil, fmt.Errorf("the server answered %s: %s", resp.Status, failed.Error.Message)
	}
	return resp, nil
}

// rebuildOnServer asks a running server to rebuild and follows its progress.
func rebuildOnServer(ctx context.Context, url, appName, user string) error {
	url = strings.TrimRight(url, "/")
	body, _ := json.Marshal(map[string]string{"app": appName, "user": user})
	call := func(method string, body []byte) (map[string]any, error) {
		var out map[string]any
		return out, callServer(ctx, method, url+"/v1/index:rebuild", body, &out)
	}
	if _, err := call(http.MethodPost, body); err != nil {
		return err
	}
	p := newProgress(os.Stderr)
	defer p.finish()
	for {
		select {
		case <-ctx.Done():
			return errors.New("stopped following; the server's rebuild goes on")
		case <-time.After(500 * time.Millisecond):
		}
		status, err := call(http.MethodGet, nil)
		if err != nil {
			return err
		}
		var pr index.Progress
		raw, _ := json.Marshal(status["progress"])
		json.Unmarshal(raw, &pr)
		switch status["state"] {
		case "done":
			pr.Done = true
			p.report(pr)
			fmt.Println("\nindex rebuilt by the server")
			return nil
		case "failed":
			return fmt.Errorf("the server's rebuild failed: %v", status["error"])
		}
		p.report(pr)
	}
}
