package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/userarchive"
)

func userCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Act on one user's memory"}
	var f userFlags
	var yes bool
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
			if err := f.check("erase"); err != nil {
				return err
			}
			if !yes {
				if err := confirmErasure(os.Stdin, os.Stderr, f.app, f.user); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var receipt *erase.Receipt
			var err error
			if f.server != "" {
				receipt, err = eraseOnServer(ctx, f.userURL(""))
			} else {
				receipt, err = eraseHere(ctx, cmd, f.app, f.user)
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
	f.add(eraseCmd, "erase")
	eraseCmd.Flags().BoolVarP(&yes, "yes", "y", false, "erase without asking (for scripts; on a terminal, the user's ID is asked for)")
	cmd.AddCommand(eraseCmd, exportCommand(), importCommand())
	return cmd
}

// confirmErasure asks, on a terminal, for the user's ID to be typed back
// (as the console and MCP's erase_user do): an erasure cannot be undone.
// Elsewhere it asks for --yes.
func confirmErasure(in *os.File, out io.Writer, app, user string) error {
	if !term.IsTerminal(int(in.Fd())) { // /dev/null is a character device too
		return errors.New("an erasure cannot be undone: add --yes to erase without being asked (standard input is not a terminal to ask on)")
	}
	fmt.Fprintf(out, "This erases user %q of app %q everywhere, for good. Type the user's ID to go on: ", user, app)
	typed, _ := bufio.NewReader(in).ReadString('\n')
	if strings.TrimRight(typed, "\r\n") != user {
		return errors.New("not erased: what was typed is not the user's ID")
	}
	return nil
}

// userFlags are the flags every user command takes.
type userFlags struct{ app, user, server string }

func (f *userFlags) add(cmd *cobra.Command, verb string) {
	cmd.Flags().StringVar(&f.app, "app", "", "the user's app")
	cmd.Flags().StringVar(&f.user, "user", "", "the user to "+verb)
	cmd.Flags().StringVar(&f.server, "server", "", "ask the server at this URL (key in $HECTOR_API_KEY)")
}

func (f *userFlags) check(verb string) error {
	if f.app == "" || f.user == "" {
		return fmt.Errorf("say whom to %s: --app A --user U", verb)
	}
	return nil
}

// userURL is the server's URL of the user, with suffix.
func (f *userFlags) userURL(suffix string) string {
	return strings.TrimRight(f.server, "/") + "/v1/apps/" + url.PathEscape(f.app) + "/users/" + url.PathEscape(f.user) + suffix
}

// openHere opens the configuration's stores in this process.
func openHere(ctx context.Context, cmd *cobra.Command, command string) (*app.Services, func(), error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	release, err := lockDataDir(cfg, command)
	if err != nil {
		return nil, nil, err
	}
	svcs, err := app.Open(ctx, cfg, newLogger())
	if err != nil {
		release()
		return nil, nil, err
	}
	return svcs, func() { svcs.Close(); release() }, nil
}

func exportCommand() *cobra.Command {
	var f userFlags
	var output string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write everything held about a user as a tar archive: --app A --user U -o FILE",
		Long: `Write everything Hector holds about one user as one tar archive: user.jsonl (whose it is),
each session (sessions/N.jsonl: the session, then its events in order), each store's part (user_state/,
artifacts/ with every version's content, facts/ with every version) and end.json.
` + "`hector user import`" + ` restores it, here or in another deployment.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check("export"); err != nil {
				return err
			}
			if output == "" {
				return errors.New("say where to write the archive: -o FILE (or -o - for standard output)")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			out, done, err := createOutput(output)
			if err != nil {
				return err
			}
			// What was written is read back as it goes, to say so.
			pr, pw := io.Pipe()
			described := make(chan string, 1)
			go func() {
				sum, err := userarchive.Describe(pr)
				io.Copy(io.Discard, pr) // what it did not read: never a reason for the export to fail
				if err != nil {
					described <- "its contents could not be read back: " + err.Error()
					return
				}
				described <- fmt.Sprintf("%d sessions, %d events, %d fact versions, %d artifact versions, %d user: state keys",
					sum.Sessions, sum.Events, sum.FactVersions, sum.ArtifactVersions, sum.UserStateKeys)
			}()
			counted := &countingWriter{w: io.MultiWriter(out, pw)}
			if f.server != "" {
				err = exportFromServer(ctx, f.userURL("/export"), counted)
			} else {
				err = exportHere(ctx, cmd, f.app, f.user, counted)
			}
			pw.Close()
			summary := <-described
			if err = done(err); err != nil {
				return err
			}
			where := output
			if output == "-" {
				where = "standard output"
			}
			fmt.Fprintf(os.Stderr, "wrote %s (%d bytes): %s\n", where, counted.n, summary)
			return nil
		},
	}
	f.add(cmd, "export")
	cmd.Flags().StringVarP(&output, "output", "o", "", "the archive to write (- for standard output)")
	return cmd
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// createOutput opens where an archive goes; done closes it, and removes a
// file left incomplete by err.
func createOutput(name string) (io.Writer, func(error) error, error) {
	if name == "-" {
		return os.Stdout, func(err error) error { return err }, nil
	}
	file, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (the archive is never written over an existing file)", err)
	}
	return file, func(err error) error {
		if err = errors.Join(err, file.Close()); err != nil {
			os.Remove(name)
		}
		return err
	}, nil
}

func exportHere(ctx context.Context, cmd *cobra.Command, app, user string, out io.Writer) error {
	svcs, closeAll, err := openHere(ctx, cmd, "hector user export")
	if err != nil {
		return err
	}
	defer closeAll()
	return userarchive.Write(ctx, out, svcs.Archive(), app, user)
}

func exportFromServer(ctx context.Context, u string, out io.Writer) error {
	resp, err := sendToServer(ctx, http.MethodGet, u, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fmt.Errorf("the archive was cut short: %w", err)
	}
	return nil
}

func importCommand() *cobra.Command {
	var f userFlags
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Restore a user from an archive of hector user export: --app A --user U FILE",
		Long: `Restore a user from an archive written by ` + "`hector user export`" + ` or GET …/users/{user}/export,
maybe in another deployment or under another user ID. The user must hold nothing yet.
Sessions keep their IDs, events, state and order; facts every version; artifacts every version.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check("import"); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			file, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer file.Close()
			var sum *userarchive.Summary
			if f.server != "" {
				sum = new(userarchive.Summary)
				err = importOnServer(ctx, f.userURL("/import"), file, sum)
			} else {
				sum, err = importHere(ctx, cmd, f.app, f.user, file)
			}
			if err != nil {
				return err
			}
			out, _ := json.MarshalIndent(sum, "", "  ")
			fmt.Println(string(out))
			return nil
		},
	}
	f.add(cmd, "import")
	return cmd
}

func importHere(ctx context.Context, cmd *cobra.Command, app, user string, archive io.Reader) (*userarchive.Summary, error) {
	svcs, closeAll, err := openHere(ctx, cmd, "hector user import")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return userarchive.Restore(ctx, archive, svcs.Archive(), app, user, "cli")
}

func importOnServer(ctx context.Context, u string, archive io.Reader, sum *userarchive.Summary) error {
	resp, err := sendToServer(ctx, http.MethodPost, u, "application/x-tar", archive)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(sum)
}

func eraseHere(ctx context.Context, cmd *cobra.Command, app, user string) (*erase.Receipt, error) {
	svcs, closeAll, err := openHere(ctx, cmd, "hector user erase")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	receipt, _, err := svcs.Erasures.Erase(ctx, app, user, "cli", math.MaxInt64)
	return receipt, err
}

func eraseOnServer(ctx context.Context, u string) (*erase.Receipt, error) {
	var receipt erase.Receipt
	return &receipt, callServer(ctx, http.MethodDelete, u, nil, &receipt)
}
