package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hectormem/hector/pkg/session"
)

// A document's vector is made of the end of the message before it too,
// when that message is someone else's: the one it replies to ("…what
// made you decide to run again?\nJon: After my last run…"). An answer
// seldom repeats its question's words, and a vector of the answer alone
// misses what it answers. On LoCoMo's development half, hybrid search
// with all-MiniLM-L6-v2 (DefaultVectorWeight 0.4) rose from hit@1 0.413
// and recall@5 0.599 to 0.432 and 0.608 with the message's last 12 words,
// 0.436 and 0.612 with 24; LongMemEval's half did not move with 24
// (recall_all@5 0.901, ndcg_any@5 0.888). beforeWords is how much of that
// message counts: its end, where a question is. With the last 8, 16 and
// 20 words hit@1 was 0.424, 0.436 and 0.433, recall@5 0.609, 0.607 and
// 0.610. Each word more is more to embed: LoCoMo's turns are about 20
// words, and loading it with its vectors took 11-12 s alone, 18 s with
// 12 words before, 21-23 s with 24. So the shortest end that keeps most
// of the gain (hector eval: 0.430 and 0.609 with 12, 0.437 and 0.612
// with 24).
//
// A person's next message is read alone: it replies to nothing of their
// own, and the end of their last message lent it a meaning it does not
// have. Ten everyday statements in a row ("I adopted a puppy named Rex",
// "The car needs new tyres before winter", …) put the car first for "what
// pet do I have"; on the first-hour set (pkg/eval/testdata) the default's
// hit@1 was 0.593 so, where e5-small alone makes 0.949. Both benchmarks
// are dialogue, whose speakers take turns (3 of LongMemEval's 45,108 pairs
// of turns share one): neither moved.
//
// Only a hybrid index's: a vector index has no words to tell a reply from
// the question before it, and LoCoMo's vector-only figures fell (0.194 and
// 0.395 to 0.188 and 0.382).
const beforeWords = 12

// source says where a batch of documents was read: whose each one is,
// and the session handle they came from, if any.
type source struct {
	owner  func(i int) Owner
	handle session.Session
}

func ownedBy(o Owner) func(int) Owner { return func(int) Owner { return o } }

// befores returns, for each of docs, the end of the document made from the
// event right before its own in its session, or "" when that event makes
// none or is by the same author. That document is looked for among docs,
// then in the handle they came from, then in the session service.
func (x *Index) befores(ctx context.Context, docs []Document, from source) ([]string, error) {
	type place struct {
		session string
		seq     int64
	}
	made := make(map[place]*Document, len(docs))
	for i := range docs {
		made[place{docs[i].SessionID, docs[i].Seq}] = &docs[i]
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		if d.Seq <= 1 {
			continue
		}
		prev := made[place{d.SessionID, d.Seq - 1}]
		if prev == nil {
			ev, err := x.eventBefore(ctx, from.owner(i), d, from.handle)
			if err != nil {
				return nil, err
			}
			if ev == nil {
				continue
			}
			doc, ok := x.opts.include.documentOf(d.SessionID, ev)
			if !ok {
				continue
			}
			prev = &doc
		}
		if !sameAuthor(*prev, d) {
			out[i] = lastWords(prev.spoken(), beforeWords)
		}
	}
	return out, nil
}

// eventBefore returns the event at d.Seq-1 in d's session, or nil when
// there is none or it cannot be known (no session service to ask).
func (x *Index) eventBefore(ctx context.Context, o Owner, d Document, handle session.Session) (*session.Event, error) {
	if handle != nil && handle.ID() == d.SessionID {
		events := handle.Events()
		i := sort.Search(events.Len(), func(i int) bool { return events.At(i).Seq >= d.Seq-1 })
		if i < events.Len() && events.At(i).Seq == d.Seq-1 {
			return events.At(i), nil
		}
	}
	if x.opts.sessions == nil {
		return nil, nil
	}
	resp, err := x.opts.sessions.Get(ctx, &session.GetRequest{AppName: o.App, UserID: o.User, SessionID: d.SessionID,
		NumRecentEvents: 1, BeforeSeq: d.Seq})
	if errors.Is(err, session.ErrNotFound) { // deleted meanwhile: the follower clears it
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("index: reading the event before %s: %w", d.EventID, err)
	}
	events := resp.Session.Events()
	if events.Len() == 0 || events.At(0).Seq != d.Seq-1 {
		return nil, nil
	}
	return events.At(0), nil
}

// sameAuthor reports whether two documents are by one author: the same
// name, or with none, the same role.
func sameAuthor(a, b Document) bool {
	return strings.EqualFold(cmp.Or(a.Author, a.Role), cmp.Or(b.Author, b.Role))
}

// lastWords returns the last n words of text, one space between them.
func lastWords(text string, n int) string {
	words := strings.Fields(text)
	return strings.Join(words[max(0, len(words)-n):], " ")
}
