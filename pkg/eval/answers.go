package eval

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/hectormem/hector/pkg/index"
)

// AnswerFile writes each question's figures and results as a JSON line
// (Options.Answered): which questions an index misses, and what it ranks
// above their answer.
type AnswerFile struct {
	mu  sync.Mutex
	f   *os.File
	enc *json.Encoder
	err error
}

// CreateAnswerFile creates (or empties) the file at path.
func CreateAnswerFile(path string) (*AnswerFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &AnswerFile{f: f, enc: json.NewEncoder(f)}, nil
}

// answer is one question's line: the question, its evidence, its figures
// and what the index ranked, as search answers it (signals included).
type answer struct {
	ID       string               `json:"id"`
	User     string               `json:"user"`
	Category string               `json:"category,omitempty"`
	Question string               `json:"question"`
	Turns    []string             `json:"answer_turns,omitempty"`
	Sessions []string             `json:"answer_sessions,omitempty"`
	Figures  map[string]float64   `json:"figures"`
	Results  []index.SearchResult `json:"results"`
}

// Answered writes one question's line; it is safe for concurrent use.
func (w *AnswerFile) Answered(q Question, results []index.SearchResult, figures map[string]float64) {
	a := answer{ID: q.ID, User: q.UserID, Category: q.Category, Question: q.Text, Turns: q.Turns, Sessions: q.Sessions, Figures: figures, Results: results}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.enc.Encode(a); err != nil && w.err == nil {
		w.err = err
	}
}

// Close closes the file, and says whether every line was written.
func (w *AnswerFile) Close() error {
	err := w.f.Close()
	if w.err != nil {
		return w.err
	}
	return err
}
