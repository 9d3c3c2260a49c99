// Package eval measures how well an index finds what answers a question,
// on labelled sets of real conversations: the public benchmarks LoCoMo and
// LongMemEval, or a user's own set in a JSON lines format of Hector's. It
// loads a set, plays its conversations into a session service and an index
// as a server would, asks each question as its user, and scores the
// results with each benchmark's own metrics (see Run).
package eval

import (
	"fmt"
	"time"
)

// Dataset is a labelled set: users' conversations, and questions whose
// answers are known turns (and sessions) of them.
type Dataset struct {
	Format    string
	Users     []User
	Questions []Question
	// Metrics names the figures each question gets, in report order.
	Metrics []string
	// Notes says what loading had to repair or leave out (malformed
	// evidence IDs, IDs that name no turn, questions left without any).
	Notes []string
}

// User is one user's memory: their sessions, oldest first.
type User struct {
	ID       string
	Sessions []Session
}

// Session is one conversation of a user.
type Session struct {
	ID    string
	Time  time.Time
	Turns []Turn
}

// Turn is one message, stored as one event with ID as its event ID.
type Turn struct {
	ID     string
	Author string
	Role   string // session.RoleUser or RoleAssistant
	Text   string
	Time   time.Time
}

// Question is asked of one user's memory.
type Question struct {
	ID       string
	UserID   string
	Text     string
	Category string
	// Apart: reported in its category but left out of the overall figures
	// (LoCoMo's adversarial questions, which its papers report apart).
	Apart bool
	// Turns are the IDs of the turns that answer it; Sessions those of the
	// sessions that do (LongMemEval's evidence is by session).
	Turns    []string
	Sessions []string
	// AskedAt is when the question was asked, where the set says
	// (LongMemEval's question_date): what "last week" in it means.
	AskedAt time.Time
}

// Turns counts a dataset's turns.
func (d *Dataset) Turns() int {
	n := 0
	for _, u := range d.Users {
		for _, s := range u.Sessions {
			n += len(s.Turns)
		}
	}
	return n
}

// Sessions counts a dataset's sessions.
func (d *Dataset) Sessions() int {
	n := 0
	for _, u := range d.Users {
		n += len(u.Sessions)
	}
	return n
}

// check refuses a dataset that cannot be scored: no question, or a
// question about a user it does not hold.
func (d *Dataset) check() error {
	if len(d.Questions) == 0 {
		return fmt.Errorf("%s: no question to score", d.Format)
	}
	users := map[string]bool{}
	for _, u := range d.Users {
		users[u.ID] = true
	}
	for _, q := range d.Questions {
		if !users[q.UserID] {
			return fmt.Errorf("%s: question %q is about user %q, who has no conversation", d.Format, q.ID, q.UserID)
		}
	}
	return nil
}
