// Command mcpcounter is a small MCP server for tests, on the official SDK,
// over stdio: its tools count the calls that reach them, so a test can tell
// a cached result from a real call.
//
//	lookup {q}   -> {"answer": "about <q>", "calls": n}
//	leak   {}    -> a result shaped like a cloud access key
//	fail   {}    -> a tool error
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var calls atomic.Int64

type lookupIn struct {
	Q string `json:"q"`
}

type lookupOut struct {
	Answer string `json:"answer"`
	Calls  int64  `json:"calls"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpcounter", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look something up (counts calls)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			return nil, lookupOut{Answer: "about " + in.Q, Calls: calls.Add(1)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "leak", Description: "Returns something shaped like a credential."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, lookupOut, error) {
			return nil, lookupOut{Answer: fmt.Sprintf("key AKIAABCDEFGHIJKLMNOP #%d", calls.Add(1)), Calls: calls.Load()}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, lookupOut, error) {
			return nil, lookupOut{}, fmt.Errorf("failure #%d", calls.Add(1))
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
