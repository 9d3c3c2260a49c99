// Command hector runs Hector: `hector serve` hosts the HTTP API, `hector
// index rebuild` rebuilds the search index, `hector config validate`
// checks a configuration file.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/datadir"
	"github.com/hectormem/hector/pkg/telemetry"
)

// version is set at build time: go build -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	root := newRoot()
	// Traces go out over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT says where;
	// without it this installs nothing.
	stopTracing, err := telemetry.Start(context.Background(), "hector", version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hector:", err)
		os.Exit(1)
	}
	err = root.Execute()
	flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	stopTracing(flush) // the spans not sent yet
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hector:", err)
		os.Exit(1)
	}
}

// newRoot is the command line: every command, with its flags.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "hector",
		Short: "Memory for AI agents: sessions, state, artifacts, search and working memory",
		Long: `Hector gives AI agents memory. Its session service stores every conversation's events,
scoped state and artifacts (SQLite by default, PostgreSQL in production); a search index
derived from them lets agents recall a user's past conversations.

With no configuration file, hector serve listens on 127.0.0.1:8080 and keeps everything it
writes in one data directory: --data-dir, else $HECTOR_DATA_DIR, else ./data. See configs/
for examples.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringP("config", "c", os.Getenv("HECTOR_CONFIG"), "configuration file (default: none, the zero configuration; or $HECTOR_CONFIG)")
	root.PersistentFlags().String("data-dir", "", "data directory, overriding the configuration and $HECTOR_DATA_DIR; what the configuration leaves out (or writes under ${HECTOR_DATA_DIR}) goes there")
	root.AddCommand(serveCommand(), indexCommand(), userCommand(), mcpCommand(), configCommand(), evalCommand(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run: func(cmd *cobra.Command, args []string) {
			fmt.Printf("hector %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	})
	return root
}

// loadConfig reads --config, or returns the zero configuration, with
// --data-dir applied before any path is derived from the data directory.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	path, _ := cmd.Flags().GetString("config")
	var o config.Overrides
	o.DataDir, _ = cmd.Flags().GetString("data-dir")
	if path == "" {
		return config.Zero(o), nil
	}
	return config.Load(path, o)
}

// lockDataDir takes the data directory for command when the configuration
// keeps state there. When a server holds it, the error says how to reach
// that server instead.
func lockDataDir(cfg *config.Config, command string) (release func(), err error) {
	local := cfg.LocalState()
	if len(local) == 0 {
		return func() {}, nil
	}
	release, err = datadir.Lock(cfg.Server.DataDir, command)
	if errors.Is(err, datadir.ErrLocked) {
		owner := datadir.Owner(cfg.Server.DataDir)
		// The command as it was typed, every flag kept, sent to the server.
		hint := commandLine() + " --server URL"
		if url, ok := strings.CutPrefix(owner, "hector serve at "); ok {
			hint = commandLine() + " --server " + url
		}
		return nil, fmt.Errorf("%s owns %s (%s); two processes must never share it: run `%s` (with $HECTOR_API_KEY if auth is on)",
			owner, cfg.Server.DataDir, strings.Join(local, ", "), hint)
	}
	return release, err
}

// commandLine is this command as typed, quoted where a word needs it.
func commandLine() string {
	words := []string{"hector"}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func configCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with configuration files"}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate",
		Short: "Check a configuration file: unknown keys, dangling references, invalid values, all at once",
		Long: `Check a configuration file and report every mistake in it, each with its line.
Environment variables the file needs that are not set here (its secrets, on a
machine other than the server's) are listed, without failing the check.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _ := cmd.Flags().GetString("config")
			if path == "" && len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				return fmt.Errorf("name the file: hector config validate FILE (or --config FILE)")
			}
			unset, err := config.Validate(path, config.Overrides{})
			var needs strings.Builder
			if len(unset) > 0 {
				needs.WriteString("It needs these environment variables, which are not set here; set them where it runs:")
				for _, e := range unset {
					fmt.Fprintf(&needs, "\n  %s", e)
				}
			}
			if err != nil {
				if needs.Len() > 0 {
					return fmt.Errorf("%w\n%s", err, needs.String())
				}
				return err
			}
			fmt.Printf("%s is valid\n", path)
			if needs.Len() > 0 {
				fmt.Println(needs.String())
			}
			return nil
		},
		Args: cobra.MaximumNArgs(1),
	})
	return cmd
}
