package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/mcp"
)

func mcpCommand() *cobra.Command {
	var app, user, serverURL string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve one user's memory to an MCP client over stdio (Claude Desktop, Cursor, ...)",
		Long: `Serve Hector's memory over the Model Context Protocol on stdin/stdout, for one app and user:
--app and --user (or $HECTOR_MCP_APP and $HECTOR_MCP_USER). Every tool acts for them alone.

By default it opens the same configuration and data as hector serve (--config, --data-dir).
When a server already owns that data directory, talk to it instead: --server URL, and when
its auth is on, the user's API key or JWT in $HECTOR_API_KEY (an app or admin key, or none
with auth off, also needs --user and --app).
Logs go to stderr; stdout carries the protocol.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if serverURL != "" {
				return mcpRemote(ctx, strings.TrimRight(serverURL, "/"), app, user)
			}
			if app == "" || user == "" {
				return errors.New("say whose memory to serve: --app A --user U (or $HECTOR_MCP_APP and $HECTOR_MCP_USER)")
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			return mcpLocal(ctx, cfg, mcp.Identity{App: app, User: user})
		},
	}
	cmd.Flags().StringVar(&app, "app", os.Getenv("HECTOR_MCP_APP"), "the app whose memory to serve ($HECTOR_MCP_APP)")
	cmd.Flags().StringVar(&user, "user", os.Getenv("HECTOR_MCP_USER"), "the user whose memory to serve ($HECTOR_MCP_USER)")
	cmd.Flags().StringVar(&serverURL, "server", "", "use the running Hector server at this URL (with auth on, the credential in $HECTOR_API_KEY)")
	return cmd
}

// mcpLocal serves from the configuration's own stores.
// stdioDrain bounds how long hector mcp, its input closed, waits for the
// answers to the requests it read.
const stdioDrain = 30 * time.Second

func mcpLocal(ctx context.Context, cfg *config.Config, id mcp.Identity) error {
	logger := newLogger()
	release, err := lockDataDir(cfg, "hector mcp")
	if err != nil {
		return err
	}
	defer release()
	svcs, err := app.Open(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer svcs.Close()
	if err := svcs.Recover(ctx); err != nil {
		return err
	}
	server := mcp.NewServer(mcp.Services{Sessions: svcs.Sessions, Index: svcs.Index, Facts: svcs.Facts, WritePolicy: cfg.Server.MCP.WritePolicy}, mcp.Fixed(id))
	return server.Run(ctx, mcp.Stdio(stdioDrain))
}

// mcpRemote serves over stdio what a running server serves at /mcp.
func mcpRemote(ctx context.Context, url, app, user string) error {
	// A server with auth off (on loopback) needs no credential.
	key := os.Getenv("HECTOR_API_KEY")
	remote, err := mcp.Remote(ctx, url, key, app, user)
	if errors.Is(err, mcp.ErrUnauthorized) && key == "" {
		return fmt.Errorf("the server at %s needs a credential: put the user's API key or JWT in $HECTOR_API_KEY", url)
	}
	if err != nil {
		return err
	}
	defer remote.Close()
	server, err := mcp.Proxy(ctx, remote)
	if err != nil {
		return err
	}
	return server.Run(ctx, mcp.Stdio(stdioDrain))
}
