package eval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// LoadJSONL reads Hector's own labelled format, JSON lines of three kinds,
// so that users can measure retrieval on their own conversations:
//
//	{"kind":"session","user":"alice","id":"trip","time":"2024-05-01T10:00:00Z"}
//	{"kind":"event","user":"alice","session":"trip","id":"e1","author":"alice","role":"user","text":"Book a flight to Lisbon"}
//	{"kind":"query","user":"alice","id":"q1","text":"Where am I flying?","category":"travel","answers":["e1"],"time":"2024-05-08T09:00:00Z"}
//
// A session comes before its events, which keep their order; time is
// optional (events follow their session's a second apart; a query is
// asked at its time, what "last week" counts back from, else when it is
// run); role is user (the default) or assistant; category is optional. A
// query's answers are the IDs of the events that answer it, in its user's
// sessions. It is scored with TurnMetrics.
func LoadJSONL(name string, raw []byte) (*Dataset, error) { return DefaultLimits.LoadJSONL(name, raw) }

// LoadJSONL is LoadJSONL within l.
func (lim Limits) LoadJSONL(name string, raw []byte) (*Dataset, error) {
	d := &Dataset{Format: "jsonl", Metrics: TurnMetrics}
	users := map[string]int{}       // index in d.Users
	sessions := map[[2]string]int{} // (user, session): index in its user's Sessions
	events := map[[2]string]bool{}  // (user, event ID)
	queries := map[[2]string]bool{}
	err := lim.lines(name, raw, func(n int, line []byte) error {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s, line %d: "+format, append([]any{name, n}, args...)...)
		}
		var l struct {
			Kind, User, Session, ID, Author, Role, Text, Category string
			Time                                                  time.Time
			Answers                                               []string
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return fail("not a line of this format (%v): see `hector eval --help`", err)
		}
		if l.User == "" || l.ID == "" {
			return fail("a %s needs a user and an id", cmp.Or(l.Kind, "line"))
		}
		switch l.Kind {
		case "session":
			if _, dup := sessions[[2]string{l.User, l.ID}]; dup {
				return fail("session %q of user %q appears twice", l.ID, l.User)
			}
			u, ok := users[l.User]
			if !ok {
				u = len(d.Users)
				users[l.User] = u
				d.Users = append(d.Users, User{ID: l.User})
			}
			sessions[[2]string{l.User, l.ID}] = len(d.Users[u].Sessions)
			d.Users[u].Sessions = append(d.Users[u].Sessions, Session{ID: l.ID, Time: l.Time})
		case "event":
			at, ok := sessions[[2]string{l.User, l.Session}]
			if !ok {
				return fail("event %q names session %q of user %q, which no line before it declares", l.ID, l.Session, l.User)
			}
			if events[[2]string{l.User, l.ID}] {
				return fail("event %q of user %q appears twice", l.ID, l.User)
			}
			if strings.TrimSpace(l.Text) == "" {
				return fail("event %q has no text", l.ID)
			}
			role := session.RoleUser
			switch l.Role {
			case "", session.RoleUser:
			case session.RoleAssistant:
				role = session.RoleAssistant
			default:
				return fail("event %q: role %q is not user or assistant", l.ID, l.Role)
			}
			events[[2]string{l.User, l.ID}] = true
			s := &d.Users[users[l.User]].Sessions[at]
			when := l.Time
			if when.IsZero() && !s.Time.IsZero() {
				when = s.Time.Add(time.Duration(len(s.Turns)) * time.Second)
			}
			s.Turns = append(s.Turns, Turn{ID: l.ID, Author: cmp.Or(l.Author, role), Role: role, Text: l.Text, Time: when})
		case "query":
			if queries[[2]string{l.User, l.ID}] {
				return fail("query %q of user %q appears twice", l.ID, l.User)
			}
			queries[[2]string{l.User, l.ID}] = true
			if strings.TrimSpace(l.Text) == "" || len(l.Answers) == 0 {
				return fail("query %q needs a text and the IDs of the events that answer it (answers)", l.ID)
			}
			for _, a := range l.Answers {
				if !events[[2]string{l.User, a}] {
					return fail("query %q: answer %q is no event of user %q declared before it", l.ID, a, l.User)
				}
			}
			d.Questions = append(d.Questions, Question{ID: l.ID, UserID: l.User, Text: l.Text, Category: cmp.Or(l.Category, "all"), Turns: l.Answers, AskedAt: l.Time})
		default:
			return fail("kind %q is not session, event or query", l.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, d.check()
}
