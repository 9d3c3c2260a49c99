package index

import (
	"maps"
	"sort"
	"sync"

	"github.com/hectormem/hector/pkg/session"
)

// pretokenized holds the terms of events that appenders tokenized before
// waiting for the follower, which writes them: tokenizing a long turn
// costs more than storing it, and the follower is one goroutine at a time
// (followMu), so work done before it is done by every appender at once.
// On LongMemEval's turns, 8 writers over HTTP, tokenizing was 45% of the
// follower's time.
type pretokenized struct {
	mu    sync.Mutex
	terms map[eventKey]tokenized
}

type tokenized struct {
	text  string // what was tokenized: the follower's document must say the same
	terms []string
}

// maxPretokenized bounds what waits for the follower: past it, what is
// held is dropped and the follower tokenizes as before.
const maxPretokenized = 4096

// add tokenizes the handle's events past the floor.
func (p *pretokenized) add(x *Index, s session.Session, floor int64) {
	events := s.Events()
	first := sort.Search(events.Len(), func(i int) bool { c := events.At(i).Cursor; return c == 0 || c > floor })
	if events.Len()-first > newestFirst { // a handle full of history: the follower reads the feed anyway
		return
	}
	found := map[eventKey]tokenized{}
	for i := first; i < events.Len(); i++ {
		if d, ok := x.opts.include.documentOf(s.ID(), events.At(i)); ok {
			text := d.searchedText()
			found[eventKey{d.SessionID, d.EventID}] = tokenized{text, x.tok.Tokens(text)}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terms == nil || len(p.terms)+len(found) > maxPretokenized {
		p.terms = make(map[eventKey]tokenized, len(found))
	}
	maps.Copy(p.terms, found)
}

// take returns the document's terms, tokenized now unless an appender did.
func (p *pretokenized) take(x *Index, d *Document) []string {
	text := d.searchedText()
	key := eventKey{d.SessionID, d.EventID}
	p.mu.Lock()
	t, ok := p.terms[key]
	if ok {
		delete(p.terms, key)
	}
	p.mu.Unlock()
	if ok && t.text == text {
		return t.terms
	}
	return x.tok.Tokens(text)
}
