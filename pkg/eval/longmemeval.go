package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// SessionMetrics are LongMemEval's own retrieval figures, over sessions
// ranked by their best turn: whether every answering session is within
// the first 5 and 10 (recall_all), and NDCG at 5 and 10 with each
// answering session relevant (ndcg_any); then turn-level ones over the
// turns marked has_answer: whether the first result is one, and whether
// one is within the first 5 and 10 (recall_any).
var SessionMetrics = []string{"recall_all@5", "recall_all@10", "ndcg_any@5", "ndcg_any@10", "hit@1", "recall_any@5", "recall_any@10"}

// lmeQuestion is one line of longmemeval_s (or one element of its array).
type lmeQuestion struct {
	QuestionID         string         `json:"question_id"`
	QuestionType       string         `json:"question_type"`
	Question           string         `json:"question"`
	QuestionDate       string         `json:"question_date"`
	AnswerSessionIDs   []string       `json:"answer_session_ids"`
	HaystackDates      []string       `json:"haystack_dates"`
	HaystackSessionIDs []string       `json:"haystack_session_ids"`
	HaystackSessions   [][]lmeMessage `json:"haystack_sessions"`
}

type lmeMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// lmeDate is how longmemeval_s writes a session's time.
const lmeDate = "2006/01/02 (Mon) 15:04"

// LoadLongMemEval reads LongMemEval questions, as longmemeval_s's JSON
// array or as JSON lines of its objects. Each question is its own user,
// whose memory is its haystack sessions (a session listed twice is stored
// once); abstention questions (an ID ending in _abs) have no answer to
// find and are left out.
func LoadLongMemEval(name string, raw []byte) (*Dataset, error) {
	return DefaultLimits.LoadLongMemEval(name, raw)
}

// LoadLongMemEval is LoadLongMemEval within l.
func (lim Limits) LoadLongMemEval(name string, raw []byte) (*Dataset, error) {
	d := &Dataset{Format: "longmemeval", Metrics: SessionMetrics}
	abstentions, noTurns := 0, 0
	add := func(where string, line []byte) error {
		var q lmeQuestion
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&q); err != nil {
			return fmt.Errorf("%s: not a LongMemEval question: %w", where, err)
		}
		switch {
		case q.QuestionID == "" || strings.TrimSpace(q.Question) == "":
			return fmt.Errorf("%s: a question needs a question_id and a question", where)
		case len(q.HaystackSessionIDs) != len(q.HaystackSessions) || len(q.HaystackDates) != len(q.HaystackSessions):
			return fmt.Errorf("%s: question %s lists %d haystack session IDs, %d dates and %d sessions: they must match",
				where, q.QuestionID, len(q.HaystackSessionIDs), len(q.HaystackDates), len(q.HaystackSessions))
		case len(q.AnswerSessionIDs) == 0 && !strings.HasSuffix(q.QuestionID, "_abs"):
			return fmt.Errorf("%s: question %s has no answer_session_ids", where, q.QuestionID)
		}
		if strings.HasSuffix(q.QuestionID, "_abs") {
			abstentions++
			return nil
		}
		user := User{ID: "lme-" + q.QuestionID}
		question := Question{ID: q.QuestionID, UserID: user.ID, Text: q.Question, Category: q.QuestionType, Sessions: q.AnswerSessionIDs}
		if q.QuestionDate != "" {
			asked, err := time.Parse(lmeDate, q.QuestionDate)
			if err != nil {
				return fmt.Errorf("%s: question %s: question date %q is not like \"2023/05/20 (Sat) 02:21\"", where, q.QuestionID, q.QuestionDate)
			}
			question.AskedAt = asked
		}
		seen := map[string]bool{}
		for i, sid := range q.HaystackSessionIDs {
			if seen[sid] {
				continue
			}
			seen[sid] = true
			start, err := time.Parse(lmeDate, q.HaystackDates[i])
			if err != nil {
				return fmt.Errorf("%s: question %s: haystack date %q is not like \"2023/05/20 (Sat) 02:21\"", where, q.QuestionID, q.HaystackDates[i])
			}
			sess := Session{ID: sid, Time: start}
			for j, m := range q.HaystackSessions[i] {
				role := session.RoleUser
				if m.Role == "assistant" {
					role = session.RoleAssistant
				} else if m.Role != "user" {
					return fmt.Errorf("%s: question %s, session %s, turn %d: role %q is not user or assistant", where, q.QuestionID, sid, j+1, m.Role)
				}
				if strings.TrimSpace(m.Content) == "" {
					continue
				}
				id := fmt.Sprintf("%s:%d", sid, j+1)
				sess.Turns = append(sess.Turns, Turn{ID: id, Author: m.Role, Role: role, Text: m.Content, Time: start.Add(time.Duration(j) * time.Second)})
				if m.HasAnswer {
					question.Turns = append(question.Turns, id)
				}
			}
			if len(sess.Turns) > 0 {
				user.Sessions = append(user.Sessions, sess)
			}
		}
		for _, sid := range q.AnswerSessionIDs {
			if !seen[sid] {
				return fmt.Errorf("%s: question %s: answer session %s is not in its haystack", where, q.QuestionID, sid)
			}
		}
		if len(question.Turns) == 0 {
			noTurns++
		}
		d.Users = append(d.Users, user)
		d.Questions = append(d.Questions, question)
		return nil
	}

	trimmed := bytes.TrimSpace(raw)
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var all []json.RawMessage
		if err := json.Unmarshal(trimmed, &all); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array of LongMemEval questions: %w", name, err)
		}
		if len(all) > lim.MaxRecords {
			return nil, lim.tooMany(name)
		}
		for i, q := range all {
			if err := add(fmt.Sprintf("%s: question %d", name, i+1), q); err != nil {
				return nil, err
			}
		}
	} else if err := lim.lines(name, raw, func(n int, line []byte) error {
		return add(fmt.Sprintf("%s, line %d", name, n), line)
	}); err != nil {
		return nil, err
	}
	if abstentions > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d abstention questions left out: they have no answer to find", abstentions))
	}
	if noTurns > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d questions mark no has_answer turn: their turn-level figures are left out", noTurns))
	}
	return d, d.check()
}
