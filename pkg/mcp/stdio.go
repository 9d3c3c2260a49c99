package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is MCP over standard input and output that serves one client's
// requests in the order it sent them, and answers every request it read
// before it ends. A client may write its requests and close its end at
// once (a script piping them in, say):
//   - the SDK serves requests concurrently, so a search piped after a
//     write could be answered first, without it; here a request is handed
//     on only once every one before it is answered (notifications, such as
//     a cancellation, and responses pass at once; Hector's server makes no
//     request of its client that a request could wait on);
//   - the SDK's stdio transport would end the session on end of input and
//     drop the answers still being made; here end of input waits until
//     each request read has its response written, or for drain at most.
func Stdio(drain time.Duration) sdk.Transport {
	return stdioOver(os.Stdin, os.Stdout, drain)
}

// stdioOver is Stdio over in and out.
func stdioOver(in io.Reader, out io.Writer, drain time.Duration) sdk.Transport {
	p := &pending{cond: sync.NewCond(new(sync.Mutex))}
	return &sdk.IOTransport{
		Reader: &draining{lines: bufio.NewReader(in), pending: p, drain: drain},
		Writer: &answering{out: out, pending: p},
	}
}

// pending counts requests read and not answered yet.
type pending struct {
	cond *sync.Cond
	n    int
}

func (p *pending) add(d int) {
	p.cond.L.Lock()
	p.n += d
	p.cond.L.Unlock()
	p.cond.Broadcast()
}

// whenNone waits until every request read so far is answered.
func (p *pending) whenNone() {
	p.cond.L.Lock()
	defer p.cond.L.Unlock()
	for p.n > 0 {
		p.cond.Wait()
	}
}

// message is what tells a request (method and ID) from a response (ID, no method).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func kindOf(line []byte) (request, response bool) {
	var m message
	if json.Unmarshal(bytes.TrimSpace(line), &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return false, false
	}
	return m.Method != "", m.Method == ""
}

// draining hands the SDK the input line by line, counting requests, and
// holds back end of input until they are answered.
type draining struct {
	lines   *bufio.Reader
	pending *pending
	drain   time.Duration
	rest    []byte // of the line being read
}

func (d *draining) Read(b []byte) (int, error) {
	if len(d.rest) == 0 {
		line, err := d.lines.ReadBytes('\n')
		if len(line) > 0 {
			if request, _ := kindOf(line); request {
				d.pending.whenNone()
				d.pending.add(1)
			}
			d.rest = line
		} else if err != nil {
			if err == io.EOF {
				d.wait()
			}
			return 0, err
		}
	}
	n := copy(b, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// wait waits until every request read is answered, or drain has passed.
func (d *draining) wait() {
	p, expired := d.pending, false
	timer := time.AfterFunc(d.drain, func() {
		p.cond.L.Lock()
		expired = true
		p.cond.L.Unlock()
		p.cond.Broadcast()
	})
	defer timer.Stop()
	p.cond.L.Lock()
	defer p.cond.L.Unlock()
	for p.n > 0 && !expired {
		p.cond.Wait()
	}
}

func (d *draining) Close() error { return nil }

// answering writes the SDK's messages out, counting responses.
type answering struct {
	out     io.Writer
	pending *pending
}

func (a *answering) Write(b []byte) (int, error) {
	n, err := a.out.Write(b)
	if err == nil {
		if _, response := kindOf(b); response {
			a.pending.add(-1)
		}
	}
	return n, err
}

func (a *answering) Close() error { return nil }
