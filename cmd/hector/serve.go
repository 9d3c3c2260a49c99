package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/datadir"
	"github.com/hectormem/hector/pkg/server"
)

func serveCommand() *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (zero configuration: 127.0.0.1:8080, data in ./data)",
		Long: `Serve Hector's HTTP API. Without --config it runs the zero configuration: SQLite and a
hybrid index (words, and meaning from the e5-small encoder built into the binary) in the data
directory (--data-dir, $HECTOR_DATA_DIR or ./data), on 127.0.0.1:8080, without auth;
server.index {type: keyword} in a configuration file searches words alone, at a fraction of the
processor time. It prints where each store keeps its data.
On any address other than loopback it refuses to start unless auth is configured.
SIGTERM or Ctrl-C stops it gracefully: in-flight requests finish, the index is saved.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if address != "" {
				cfg.Server.Address = address
			}
			return serve(cfg)
		},
	}
	cmd.Flags().StringVar(&address, "address", "", "listen address, overriding the configuration (such as 127.0.0.1:9000)")
	return cmd
}

// printLocations says where each store keeps its data.
func printLocations(w io.Writer, cfg *config.Config) {
	for _, l := range cfg.Locations() {
		fmt.Fprintf(w, "  %-15s %s\n", l.What+":", l.Where)
	}
	agents := "none (an agents: section of the configuration hosts some)"
	if len(cfg.Agents) > 0 {
		var names []string
		for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
			a := cfg.Agents[name]
			names = append(names, fmt.Sprintf("%s (app %s, model %s)", name, cmp.Or(a.App, name), cfg.LLMs[a.LLM].Model))
		}
		agents = strings.Join(names, ", ") + "; POST /v1/agents/{name}/run"
	}
	fmt.Fprintf(w, "  %-15s %s\n", "agents:", agents)
}

func serve(cfg *config.Config) error {
	logger := newLogger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Refused before anything is opened: a refused start leaves no data
	// directory, database or facts key behind.
	if a := cfg.Server.Auth; len(a.APIKeys) == 0 && a.JWT == nil && !server.IsLoopback(cfg.Server.Address) {
		return errOpenServer(cfg.Server.Address)
	}
	listener, err := net.Listen("tcp", cfg.Server.Address)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w (is another server running? use --address)", cfg.Server.Address, err)
	}
	url := "http://" + listener.Addr().String()
	// A replica whose stores are all shared keeps nothing of its own in
	// the data directory, and needs no lock on it.
	if local := cfg.LocalState(); len(local) > 0 {
		release, err := datadir.Lock(cfg.Server.DataDir, "hector serve at "+url)
		if err != nil {
			listener.Close()
			return fmt.Errorf("%w: one server per data directory (it holds %s)", err, strings.Join(local, ", "))
		}
		defer release()
	}

	svcs, err := app.Open(ctx, cfg, logger)
	if err != nil {
		listener.Close()
		return err
	}
	defer func() {
		if err := svcs.Close(); err != nil {
			logger.Error("closing the stores", "error", err)
		}
	}()
	srv, err := server.New(svcs, cfg, logger)
	if err != nil {
		listener.Close()
		return err
	}
	if !srv.AuthEnabled() && !server.IsLoopback(listener.Addr().String()) {
		listener.Close()
		return errOpenServer(cfg.Server.Address)
	}
	follow, stopFollow := context.WithCancel(context.Background())
	defer stopFollow()
	// After server.New, so that a resumed erasure (or an undone import) clears the agents' caches too.
	if err := svcs.Recover(follow); err != nil {
		listener.Close()
		return err
	}
	go srv.Follow(follow, 2*time.Second)
	go svcs.Facts.RunSweeper(follow, 10*time.Minute, logger)

	httpServer := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute, // artifact uploads
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	if err := serveProfiles(logger); err != nil {
		listener.Close()
		return err
	}
	printLocations(os.Stdout, cfg)
	fmt.Printf("Hector is serving at %s\n", url)
	if !srv.AuthEnabled() {
		fmt.Println("Auth is off: only this machine can reach the server.")
	}
	errc := make(chan error, 1)
	go func() { errc <- httpServer.Serve(listener) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// errOpenServer refuses a server that would answer anyone without a credential.
func errOpenServer(addr string) error {
	return fmt.Errorf("refusing to serve on %s without auth: add server.auth.api_keys or server.auth.jwt to the configuration, or listen on 127.0.0.1", addr)
}

// serveProfiles serves Go's runtime profiles at HECTOR_PPROF_ADDR, if
// set: for finding where time and memory go under load. They hold stacks
// and counts, never what a user stored.
func serveProfiles(logger *slog.Logger) error {
	addr := os.Getenv("HECTOR_PPROF_ADDR")
	if addr == "" {
		return nil
	}
	if !server.IsLoopback(addr) {
		return fmt.Errorf("HECTOR_PPROF_ADDR=%s: profiles are served on loopback only (such as 127.0.0.1:6060)", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { logger.Warn("pprof stopped", "error", http.ListenAndServe(addr, mux)) }()
	return nil
}
