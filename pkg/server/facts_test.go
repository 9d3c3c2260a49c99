package server

import (
	"strings"
	"testing"
)

// A fact that another key already holds in other words is refused with a
// 409 naming that key, and stored nowhere; asked to merge, the write
// renews that fact and says so. The same words with their numbers in
// another order are another fact, and stored.
func TestAFactHeldUnderAnotherKeyIsNotDroppedSilently(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice/facts"
	for _, c := range []struct {
		body map[string]any
		code int
		want string
	}{
		{map[string]any{"key": "office/room", "value": "Office is room 12 on floor 3"}, 201, `"decision":"added"`},
		{map[string]any{"key": "home/flat", "value": "Office is room 3 on floor 12"}, 201, `"decision":"added"`},
		{map[string]any{"key": "drinks", "value": "Does not drink alcohol"}, 201, `"decision":"added"`},
		{map[string]any{"key": "alcohol", "value": "Doesn't drink alcohol"}, 409, `"code":"duplicate"`},
		{map[string]any{"key": "alcohol", "value": "Doesn't drink alcohol", "merge_duplicates": true}, 201, `"decision":"duplicate"`},
	} {
		w := do(t, s, "POST", u, adminKey, c.body)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%v: %d %s, want %d with %s", c.body, w.Code, w.Body, c.code, c.want)
		}
		if c.code == 409 && !strings.Contains(w.Body.String(), `key \"drinks\" holds it`) {
			t.Errorf("the 409 does not name the key that holds the fact: %s", w.Body)
		}
	}
	if w := do(t, s, "GET", u, adminKey, nil); strings.Contains(w.Body.String(), `"key":"alcohol"`) || !strings.Contains(w.Body.String(), `"key":"home/flat"`) {
		t.Errorf("alice's facts: %s", w.Body)
	}
}
