package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/erase"
)

func userCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Act on one user's memory"}
	var app, user, serverURL string
	eraseCmd := &cobra.Command{
		Use:   "erase",
		Short: "Erase a user everywhere: --app A --user U",
		Long: `Erase one user from every store: their sessions with events, state, artifacts, facts
and index entries, their user: state and artifacts, their facts with every past version.
Every store is then asked again, and the receipt says what was removed and that nothing is
left; it is kept beside the sessions (GET /v1/apps/A/users/U/erasure).

With a running server, ask it with --server URL (an app's or admin key in $HECTOR_API_KEY);
otherwise the stores of the configuration are opened here.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if app == "" || user == "" {
				return errors.New("say whom to erase: --app A --user U")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var receipt *erase.Receipt
			var err error
			if serverURL != "" {
				receipt, err = eraseOnServer(ctx, serverURL, app, user)
			} else {
				receipt, err = eraseHere(ctx, cmd, app, user)
			}
			if err != nil {
				return err
			}
			out, _ := json.MarshalIndent(receipt, "", "  ")
			fmt.Println(string(out))
			if !receipt.Verified {
				return errors.New("the verification pass found some of the user left: run the erasure again")
			}
			return nil
		},
	}
	eraseCmd.Flags().StringVar(&app, "app", "", "the user's app")
	eraseCmd.Flags().StringVar(&user, "user", "", "the user to erase")
	eraseCmd.Flags().StringVar(&serverURL, "server", "", "ask the server at this URL (key in $HECTOR_API_KEY)")
	cmd.AddCommand(eraseCmd)
	return cmd
}

func eraseHere(ctx context.Context, cmd *cobra.Command, app, user string) (*erase.Receipt, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	release, err := lockDataDir(cfg, "hector user erase")
	if err != nil {
		return nil, err
	}
	defer release()
	svcs, err := config.Open(ctx, cfg, newLogger())
	if err != nil {
		return nil, err
	}
	defer svcs.Close()
	return svcs.Erase(ctx, app, user, "cli", nil)
}

func eraseOnServer(ctx context.Context, server, app, user string) (*erase.Receipt, error) {
	u := strings.TrimRight(server, "/") + "/v1/apps/" + url.PathEscape(app) + "/users/" + url.PathEscape(user)
	var receipt erase.Receipt
	return &receipt, callServer(ctx, http.MethodDelete, u, nil, &receipt)
}
