package jsondepth

import (
	"encoding/json"
	"strings"
	"testing"
)

// depthOf is the reference: the nesting of the decoded value.
func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

func TestExceeds(t *testing.T) {
	for raw, depth := range map[string]int{
		`1`: 0, `"[[[{"`: 0, `[]`: 1, `{"a": [1, {"b": []}]}`: 4, `["\"[", ["\\"]]`: 2,
		strings.Repeat("[", 100) + strings.Repeat("]", 100): 100,
	} {
		if Exceeds([]byte(raw), depth) || !Exceeds([]byte(raw), depth-1) && depth > 0 {
			t.Errorf("%.40s: Exceeds disagrees with its depth %d", raw, depth)
		}
	}
}

// For any valid JSON, Exceeds agrees with the depth of the decoded value.
func FuzzExceeds(f *testing.F) {
	for _, seed := range []string{`{}`, `[[1],[2,[3]]]`, `{"a\"[":[{"b":"]]"}]}`, `"\\\\"`, `[["\\\\\"["]]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		d := depthOf(v)
		if Exceeds(raw, d) || (d > 0 && !Exceeds(raw, d-1)) {
			t.Errorf("%q nests %d deep; Exceeds says otherwise", raw, d)
		}
	})
}
