package eval

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"
	"time"
)

// A LoCoMo conversation in the per-conversation layout, with the data's
// known flaws: malformed evidence IDs and one that names no turn.
const locomoConversation = `{
  "speaker_a": "Caroline", "speaker_b": "Melanie",
  "session_1_date_time": "1:56 pm on 8 May, 2023",
  "session_1": [
    {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
    {"speaker": "Melanie", "dia_id": "D1:2", "text": "Look at this!", "blip_caption": "a photo of a sunset over a lake"}
  ],
  "session_2_date_time": "7:55 pm on 9 June, 2023",
  "session_2": [
    {"speaker": "Melanie", "dia_id": "D2:5", "text": "We went camping with the kids."},
    {"speaker": "Caroline", "dia_id": "D2:11", "text": "I am researching adoption agencies."},
    {"speaker": "Caroline", "dia_id": "D2:26", "text": "Counseling is my calling."}
  ],
  "session_3_date_time": "1:00 pm on 10 June, 2023",
  "qa": [
    {"question": "When did Caroline go to the support group?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
    {"question": "What did Melanie share?", "answer": "a sunset", "evidence": ["D1:02"], "category": 4},
    {"question": "What is Caroline's calling?", "evidence": ["D:2:26"], "category": 1},
    {"question": "Where did they go?", "evidence": ["D2:5; D2:11"], "category": 3},
    {"question": "Which agency?", "evidence": ["D9:9"], "category": 4},
    {"question": "What did Caroline realize after her race?", "evidence": ["D2:5", "D7:1"], "category": 5, "adversarial_answer": "x"}
  ]
}`

func TestLoadLoCoMo(t *testing.T) {
	d, err := LoadLoCoMo("26.json", []byte(locomoConversation))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Users) != 1 || d.Users[0].ID != "locomo-26" || len(d.Users[0].Sessions) != 2 || d.Turns() != 5 {
		t.Fatalf("users = %+v", d.Users)
	}
	shared := d.Users[0].Sessions[0].Turns[1]
	if shared.Text != "Look at this! and shared a photo of a sunset over a lake" || shared.Author != "Melanie" {
		t.Errorf("a turn with a photo = %+v", shared)
	}
	if s := d.Users[0].Sessions[1]; s.Time.Format("2006-01-02 15:04") != "2023-06-09 19:55" || !s.Turns[1].Time.After(s.Turns[0].Time) {
		t.Errorf("session 2's times: %v, %v", s.Time, s.Turns)
	}
	var got []string
	for _, q := range d.Questions {
		got = append(got, q.Category+":"+strings.Join(q.Turns, "+"))
	}
	// D1:02 and D:2:26 repaired; "D2:5; D2:11" split (two repairs); D9:9
	// and D7:1 name no turn, and the question with nothing else is left out.
	want := "temporal:D1:1 single-hop:D1:2 multi-hop:D2:26 open-domain:D2:5+D2:11 adversarial:D2:5"
	if strings.Join(got, " ") != want {
		t.Errorf("questions = %s\nwant %s", strings.Join(got, " "), want)
	}
	if !d.Questions[4].Apart || d.Questions[0].Apart {
		t.Error("only adversarial questions are apart")
	}
	if notes := strings.Join(d.Notes, "; "); notes != "evidence IDs: 4 repaired, 2 naming no turn dropped; 1 questions left out: no evidence ID of theirs names a turn" {
		t.Errorf("notes = %s", notes)
	}

	// The benchmark's locomo10.json (an array of samples), and a zip of it.
	array := `[{"sample_id": "conv-26", "conversation": ` + locomoConversation[:strings.Index(locomoConversation, `"qa"`)] + `"x": 1}, "qa": [{"question": "q", "evidence": ["D1:1"], "category": 4}]}]`
	d, err = LoadLoCoMo("locomo10.json", []byte(array))
	if err != nil || d.Users[0].ID != "locomo-26" || len(d.Questions) != 1 {
		t.Fatalf("locomo10.json: %+v, %v", d, err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for _, name := range []string{"data/26.json", "data/41.json"} {
		w, _ := zw.Create(name)
		w.Write([]byte(locomoConversation))
	}
	zw.Close()
	d, err = LoadLoCoMo("dev.zip", zipped.Bytes())
	if err != nil || len(d.Users) != 2 || d.Users[1].ID != "locomo-41" || len(d.Questions) != 10 {
		t.Fatalf("a zip of two: %v users, %v", len(d.Users), err)
	}
}

func TestLoadLoCoMoRefusals(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":          `{"speaker_a": `,
		"no session":        `{"qa": [{"question": "q", "evidence": ["D1:1"], "category": 1}]}`,
		"a bad date":        `{"session_1_date_time": "yesterday", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": "hi"}]}`,
		"a turn without ID": `{"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "a", "text": "hi"}]}`,
		"a category 7":      `{"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": "hi"}], "qa": [{"question": "q", "evidence": ["D1:1"], "category": 7}]}`,
		"no question":       `{"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "a", "dia_id": "D1:1", "text": "hi"}], "qa": []}`,
		"not a zip":         "PK\x03\x04 broken",
	} {
		if _, err := LoadLoCoMo("x.json", []byte(raw)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func lmeLine(id, typ string, extra string) string {
	return `{"question_id": "` + id + `", "question_type": "` + typ + `", "question": "Where do I keep my sneakers?", "question_date": "2023/07/20 (Thu) 09:15", "answer": "under my bed",
  "answer_session_ids": ["answer_1"], "haystack_dates": ["2023/07/17 (Mon) 23:24", "2023/07/19 (Wed) 22:32", "2023/07/17 (Mon) 23:24"],
  "haystack_session_ids": ["noise_1", "answer_1", "noise_1"],
  "haystack_sessions": [
    [{"role": "user", "content": "Tips for a pitch?"}, {"role": "assistant", "content": "Practice."}],
    [{"role": "user", "content": "I keep my old sneakers under my bed.", "has_answer": true}, {"role": "assistant", "content": ""}, {"role": "assistant", "content": "Noted."}],
    [{"role": "user", "content": "Tips for a pitch?"}, {"role": "assistant", "content": "Practice."}]
  ]` + extra + `}`
}

func TestLoadLongMemEval(t *testing.T) {
	lines := strings.ReplaceAll(lmeLine("q1", "knowledge-update", ""), "\n", " ") + "\n\n" + strings.ReplaceAll(lmeLine("q2_abs", "temporal-reasoning", ""), "\n", " ") + "\n"
	for name, raw := range map[string]string{"lines": lines, "array": "[" + lmeLine("q1", "knowledge-update", "") + "]"} {
		d, err := LoadLongMemEval(name, []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(d.Users) != 1 || len(d.Questions) != 1 {
			t.Fatalf("%s: %d users, %d questions", name, len(d.Users), len(d.Questions))
		}
		u, q := d.Users[0], d.Questions[0]
		// noise_1 listed twice is stored once; the empty turn is left out.
		if u.ID != "lme-q1" || len(u.Sessions) != 2 || len(u.Sessions[1].Turns) != 2 || u.Sessions[1].Turns[1].ID != "answer_1:3" {
			t.Errorf("%s: user = %+v", name, u)
		}
		if q.Category != "knowledge-update" || strings.Join(q.Sessions, ",") != "answer_1" || strings.Join(q.Turns, ",") != "answer_1:1" ||
			!q.AskedAt.Equal(time.Date(2023, 7, 20, 9, 15, 0, 0, time.UTC)) {
			t.Errorf("%s: question = %+v", name, q)
		}
	}
	d, _ := LoadLongMemEval("lines", []byte(lines))
	if len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "1 abstention") {
		t.Errorf("notes = %v", d.Notes)
	}
	for name, raw := range map[string]string{
		"bad JSON on line 2":     lmeLine("q1", "t", "") + "\n{broken\n",
		"dates do not match":     strings.Replace(lmeLine("q1", "t", ""), `"2023/07/17 (Mon) 23:24", "2023/07/19`, `"2023/07/19`, 1),
		"a bad date":             strings.Replace(lmeLine("q1", "t", ""), "2023/07/19 (Wed) 22:32", "last week", 1),
		"a bad question date":    strings.Replace(lmeLine("q1", "t", ""), "2023/07/20 (Thu) 09:15", "today", 1),
		"answer not in haystack": strings.Replace(lmeLine("q1", "t", ""), `["answer_1"]`, `["answer_9"]`, 1),
		"a bad role":             strings.Replace(lmeLine("q1", "t", ""), `"role": "user", "content": "Tips`, `"role": "system", "content": "Tips`, 1),
	} {
		raw = strings.ReplaceAll(raw, "\n  ", " ")
		_, err := LoadLongMemEval("x.jsonl", []byte(raw))
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "bad JSON on line 2" && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v does not name the line", name, err)
		}
	}
}

const ownSet = `{"kind":"session","user":"alice","id":"trip","time":"2024-05-01T10:00:00Z"}
{"kind":"event","user":"alice","session":"trip","id":"e1","author":"alice","text":"Book a flight to Lisbon for May"}
{"kind":"event","user":"alice","session":"trip","id":"e2","role":"assistant","text":"Booked: TAP 1234, 120 euros"}

{"kind":"session","user":"bob","id":"work"}
{"kind":"event","user":"bob","session":"work","id":"e1","text":"Deploys go through Konflux"}
{"kind":"query","user":"alice","id":"q1","text":"Where am I flying in May?","category":"travel","answers":["e1"],"time":"2024-05-08T09:00:00Z"}
{"kind":"query","user":"bob","id":"q2","text":"How do we deploy?","answers":["e1"]}
`

func TestLoadJSONL(t *testing.T) {
	d, err := LoadJSONL("own.jsonl", []byte(ownSet))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Users) != 2 || d.Turns() != 3 || len(d.Questions) != 2 || d.Questions[1].Category != "all" {
		t.Fatalf("dataset = %+v", d)
	}
	if asked := d.Questions[0].AskedAt; !asked.Equal(time.Date(2024, 5, 8, 9, 0, 0, 0, time.UTC)) || !d.Questions[1].AskedAt.IsZero() {
		t.Errorf("asked at %v and %v; want q1's time, and none for q2 (asked when run)", asked, d.Questions[1].AskedAt)
	}
	e2 := d.Users[0].Sessions[0].Turns[1]
	if e2.Role != "assistant" || e2.Author != "assistant" || e2.Time.Format("15:04:05") != "10:00:01" {
		t.Errorf("e2 = %+v", e2)
	}
	for want, line := range map[string]string{
		"line 2: event \"e9\" names session \"nope\"":              `{"kind":"event","user":"alice","session":"nope","id":"e9","text":"x"}`,
		"line 2: not a line of this format":                        `{"kind":"event", "oops": 1}`,
		"line 2: kind \"fact\" is not":                             `{"kind":"fact","user":"alice","id":"f"}`,
		"line 2: query \"q\": answer \"e7\" is no event":           `{"kind":"query","user":"alice","id":"q","text":"t","answers":["e7"]}`,
		"line 2: session \"trip\" of user \"alice\" appears twice": `{"kind":"session","user":"alice","id":"trip"}`,
		"line 2: a event needs a user and an id":                   `{"kind":"event","session":"trip","text":"x"}`,
		"line 2: not a line of this format (invalid":               `{broken`,
		"line 2: not a line of this format (parsing time":          `{"kind":"query","user":"alice","id":"q","text":"t","answers":["e1"],"time":"yesterday"}`,
		"no question to score":                                     `{"kind":"event","user":"alice","session":"trip","id":"e1","text":"x"}`,
	} {
		_, err := LoadJSONL("own.jsonl", []byte(`{"kind":"session","user":"alice","id":"trip"}`+"\n"+line+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
