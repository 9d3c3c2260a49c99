package eval

import (
	"archive/zip"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// LoCoMo's question categories, by their number in the data.
var locomoCategories = map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

// TurnMetrics are the turn-level figures of LoCoMo and of Hector's own
// format: the share of questions whose first result answers them, the
// share of answering turns within the first 5 and 10, the mean reciprocal
// rank of the first answering turn within 10, and NDCG at 5.
var TurnMetrics = []string{"hit@1", "recall@5", "recall@10", "mrr@10", "ndcg@5"}

// LoadLoCoMo reads LoCoMo conversations: the benchmark's locomo10.json (an
// array of samples, each with its conversation and qa), one conversation's
// own file (its sessions and qa at the top), or a zip of either. Each
// conversation is one user; a photo's caption is appended to its turn's
// text, as the benchmark's text-only baselines do. Questions of categories
// 1-4 are scored; adversarial ones (5) are reported apart. Malformed
// evidence IDs are repaired where their meaning is plain (D:11:26, D30:05,
// "D8:6; D9:17"), and IDs that name no turn are dropped; Notes counts both.
func LoadLoCoMo(name string, raw []byte) (*Dataset, error) {
	return DefaultLimits.LoadLoCoMo(name, raw)
}

// LoadLoCoMo is LoadLoCoMo within lim: a zip's files together count
// against its MaxBytes, and each conversation against its MaxRecords.
func (lim Limits) LoadLoCoMo(name string, raw []byte) (*Dataset, error) {
	l := &locomoLoader{d: &Dataset{Format: "locomo", Metrics: TurnMetrics}, lim: lim, name: name}
	if bytes.HasPrefix(raw, []byte("PK")) {
		zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
		if err != nil {
			return nil, fmt.Errorf("%s: not a zip archive LoCoMo's data can be read from: %w", name, err)
		}
		files := slices.Clone(zr.File)
		slices.SortFunc(files, func(a, b *zip.File) int { return strings.Compare(a.Name, b.Name) })
		for _, f := range files {
			if f.FileInfo().IsDir() || !strings.HasSuffix(f.Name, ".json") || strings.HasPrefix(path.Base(f.Name), ".") {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", name, f.Name, err)
			}
			body, err := l.lim.readAll(name, rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			l.lim.MaxBytes -= int64(len(body))
			if err := l.file(name+": "+f.Name, strings.TrimSuffix(path.Base(f.Name), ".json"), body); err != nil {
				return nil, err
			}
		}
	} else if err := l.file(name, strings.TrimSuffix(path.Base(name), ".json"), raw); err != nil {
		return nil, err
	}
	if len(l.d.Users) == 0 {
		return nil, fmt.Errorf("%s: no LoCoMo conversation in it (a sample has speaker_a, session_1, … and qa)", name)
	}
	if l.repaired > 0 || l.dropped > 0 {
		l.d.Notes = append(l.d.Notes, fmt.Sprintf("evidence IDs: %d repaired, %d naming no turn dropped", l.repaired, l.dropped))
	}
	if l.unanswered > 0 {
		l.d.Notes = append(l.d.Notes, fmt.Sprintf("%d questions left out: no evidence ID of theirs names a turn", l.unanswered))
	}
	return l.d, l.d.check()
}

type locomoLoader struct {
	d                             *Dataset
	lim                           Limits
	name                          string // the file, for the limits' errors
	records                       int
	repaired, dropped, unanswered int
}

// locomoSample is one conversation with its questions, in either layout.
type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []locomoQA                 `json:"qa"`
}

type locomoQA struct {
	Question string          `json:"question"`
	Evidence json.RawMessage `json:"evidence"`
	Category int             `json:"category"`
}

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

// file reads one JSON document: an array of samples, or one sample.
func (l *locomoLoader) file(name, base string, raw []byte) error {
	raw = bytes.TrimSpace(raw)
	if bytes.HasPrefix(raw, []byte("[")) {
		var samples []json.RawMessage
		if err := json.Unmarshal(raw, &samples); err != nil {
			return fmt.Errorf("%s: not LoCoMo's JSON: %w", name, err)
		}
		for i, s := range samples {
			if err := l.sample(fmt.Sprintf("%s: sample %d", name, i+1), fmt.Sprintf("%s-%d", base, i+1), s); err != nil {
				return err
			}
		}
		return nil
	}
	return l.sample(name, base, raw)
}

func (l *locomoLoader) sample(name, fallbackID string, raw []byte) error {
	if err := l.lim.count(l.name, &l.records); err != nil {
		return err
	}
	var s locomoSample
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: not a LoCoMo sample: %w", name, err)
	}
	if s.Conversation == nil { // the per-conversation layout: its keys at the top
		if err := json.Unmarshal(raw, &s.Conversation); err != nil {
			return fmt.Errorf("%s: not a LoCoMo sample: %w", name, err)
		}
	}
	user := User{ID: "locomo-" + strings.TrimPrefix(cmp.Or(s.SampleID, fallbackID), "conv-")}
	turns := map[string]bool{}
	for _, n := range sessionNumbers(s.Conversation) {
		key := fmt.Sprintf("session_%d", n)
		var raw []locomoTurn
		if err := json.Unmarshal(s.Conversation[key], &raw); err != nil {
			return fmt.Errorf("%s: %s: %w", name, key, err)
		}
		var when string
		json.Unmarshal(s.Conversation[key+"_date_time"], &when)
		start, err := time.Parse("3:04 pm on 2 January, 2006", strings.TrimSpace(when))
		if err != nil {
			return fmt.Errorf("%s: %s_date_time %q is not a time like \"1:56 pm on 8 May, 2023\"", name, key, when)
		}
		sess := Session{ID: key, Time: start}
		for i, t := range raw {
			if t.DiaID == "" || strings.TrimSpace(t.Text) == "" && t.BlipCaption == "" {
				return fmt.Errorf("%s: %s, turn %d: a turn needs a dia_id and text", name, key, i+1)
			}
			text := t.Text
			if t.BlipCaption != "" {
				text += " and shared " + t.BlipCaption
			}
			turns[t.DiaID] = true
			sess.Turns = append(sess.Turns, Turn{ID: t.DiaID, Author: t.Speaker, Role: session.RoleUser, Text: text,
				Time: start.Add(time.Duration(i) * time.Second)})
		}
		if len(sess.Turns) > 0 {
			user.Sessions = append(user.Sessions, sess)
		}
	}
	if len(user.Sessions) == 0 {
		return fmt.Errorf("%s: no session with turns (session_1, session_2, …)", name)
	}
	l.d.Users = append(l.d.Users, user)
	for i, qa := range s.QA {
		category, ok := locomoCategories[qa.Category]
		if !ok {
			return fmt.Errorf("%s: question %d has category %d, not one of LoCoMo's 1-5", name, i+1, qa.Category)
		}
		var ids []string
		for _, id := range l.evidence(qa.Evidence) {
			if turns[id] {
				ids = append(ids, id)
			} else {
				l.dropped++
			}
		}
		if len(ids) == 0 {
			l.unanswered++
			continue
		}
		l.d.Questions = append(l.d.Questions, Question{ID: fmt.Sprintf("%s#%d", user.ID, i+1), UserID: user.ID, Text: qa.Question,
			Category: category, Apart: qa.Category == 5, Turns: ids})
	}
	return nil
}

// sessionNumbers are the numbers of a conversation's session_N keys that
// hold turns, in order.
func sessionNumbers(conv map[string]json.RawMessage) []int {
	var ns []int
	for k := range conv {
		if rest, ok := strings.CutPrefix(k, "session_"); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				ns = append(ns, n)
			}
		}
	}
	slices.Sort(ns)
	return ns
}

var diaID = regexp.MustCompile(`^D:?(\d+):0*(\d+)$`)

// evidence reads a question's evidence IDs, repairing those whose meaning
// is plain.
func (l *locomoLoader) evidence(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return nil
		}
		list = []string{one}
	}
	var out []string
	for _, item := range list {
		parts := strings.FieldsFunc(item, func(r rune) bool { return r == ';' || r == ',' })
		for _, p := range parts {
			p = strings.TrimSpace(p)
			id := p
			if m := diaID.FindStringSubmatch(p); m != nil {
				id = "D" + m[1] + ":" + m[2]
			}
			if id != item {
				l.repaired++
			}
			out = append(out, id)
		}
	}
	return out
}
