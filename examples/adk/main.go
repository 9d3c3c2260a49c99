// An ADK-Go agent whose memory is Hector: in a first session the user says
// something; in a second, new session the agent is asked about it, calls
// ADK's load_memory tool, and answers from what Hector found. The model is
// scripted, so the example runs offline; give the agent a real one
// (gemini.NewModel, say) and nothing else changes.
//
//	go run .                                   # Hector in this process, data in ./hector-data
//	go run . -server http://127.0.0.1:8080     # a running `hector serve`
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/loadmemorytool"
	"google.golang.org/genai"

	hectoradk "github.com/hectormem/hector/integrations/adk"
	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
)

func main() {
	server := flag.String("server", "", "a running `hector serve` to use, such as http://127.0.0.1:8080 (default: Hector in this process)")
	dataDir := flag.String("data-dir", "hector-data", "where Hector in this process keeps its data")
	flag.Parse()
	ctx := context.Background()
	services, closeHector, err := openHector(ctx, *server, os.Getenv("HECTOR_API_KEY"), *dataDir)
	if err != nil {
		log.Fatal(err)
	}
	defer closeHector()
	if err := run(ctx, services, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// openHector connects to a server, or opens Hector's stores in this
// process exactly as `hector serve --data-dir dir` would.
func openHector(ctx context.Context, server, apiKey, dir string) (*hectoradk.Services, func(), error) {
	if server != "" {
		s, err := hectoradk.Connect(server, apiKey)
		return s, func() {}, err
	}
	cfg, err := config.Parse("adk-example", fmt.Appendf(nil, "server: {data_dir: %q}\n", dir), config.Overrides{})
	if err != nil {
		return nil, nil, err
	}
	h, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil, err
	}
	return hectoradk.New(h), func() { h.Close() }, nil
}

// run has two conversations with one user and prints them.
func run(ctx context.Context, h *hectoradk.Services, out io.Writer) error {
	assistant, err := llmagent.New(llmagent.Config{
		Name:        "assistant",
		Model:       scriptedModel{},
		Instruction: "Answer from memory when the user asks about the past.",
		Tools:       []tool.Tool{loadmemorytool.New()},
	})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: "adk-example", Agent: assistant,
		SessionService: h.Session, MemoryService: h.Memory, ArtifactService: h.Artifact})
	if err != nil {
		return err
	}
	const user = "rosa"
	for _, said := range []string{
		"My sister Inês moved to Porto last spring.",
		"Where does my sister live now?",
	} {
		// A new session each time: the second remembers only through Hector.
		created, err := h.Session.Create(ctx, &session.CreateRequest{AppName: "adk-example", UserID: user})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "session %s\n  %s: %s\n", created.Session.ID(), user, said)
		for ev, err := range r.Run(ctx, user, created.Session.ID(), genai.NewContentFromText(said, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				return err
			}
			printEvent(out, ev)
		}
	}
	return nil
}

func printEvent(out io.Writer, ev *session.Event) {
	if ev.Content == nil {
		return
	}
	for _, p := range ev.Content.Parts {
		switch {
		case p.Text != "":
			fmt.Fprintf(out, "  %s: %s\n", ev.Author, p.Text)
		case p.FunctionCall != nil:
			fmt.Fprintf(out, "  %s calls %s(%v)\n", ev.Author, p.FunctionCall.Name, p.FunctionCall.Args)
		case p.FunctionResponse != nil:
			fmt.Fprintf(out, "  %s found %d memories\n", p.FunctionResponse.Name, memoryCount(p.FunctionResponse.Response))
		}
	}
}
