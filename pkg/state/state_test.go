package state

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestScopeOf(t *testing.T) {
	for key, want := range map[string]Scope{
		"app:theme": ScopeApp, "user:name": ScopeUser, "temp:x": ScopeTemp, "topic": ScopeSession,
		"apps:x": ScopeSession, "User:x": ScopeSession, "user:a:b": ScopeUser, "日本語": ScopeSession, "user:名前": ScopeUser,
	} {
		if got, err := ScopeOf(key); err != nil || got != want {
			t.Errorf("ScopeOf(%q) = %v, %v; want %v", key, got, err, want)
		}
	}
	for _, key := range []string{"", "app:", "user:", "temp:", strings.Repeat("k", MaxKeyChars+1), strings.Repeat("é", MaxKeyChars+1), "a\x00b", "tab\there", "\xff\xfe"} {
		_, err := ScopeOf(key)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ScopeOf(%q): error %v, want ErrInvalidKey", key, err)
		}
	}
	_, err := ScopeOf("user:")
	if err == nil || !strings.Contains(err.Error(), `"user:name"`) {
		t.Errorf("bare prefix error %q does not say how to fix it", err)
	}
}

func TestNormalize(t *testing.T) {
	v, err := Normalize("k", map[string]any{"n": 1, "list": []int{1, 2}, "s": "x", "nested": map[string]bool{"b": true}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 1.0, "list": []any{1.0, 2.0}, "s": "x", "nested": map[string]any{"b": true}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Normalize = %#v, want %#v", v, want)
	}
	for what, bad := range map[string]any{
		"channel": make(chan int), "function": func() {}, "NaN": math.NaN(), "-Inf": math.Inf(-1),
		"nested NaN": map[string]any{"x": []any{math.NaN()}}, "complex": complex(1, 2),
	} {
		if _, err := Normalize("k", bad, 0); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("Normalize(%s): error %v, want ErrInvalidValue", what, err)
		} else if !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("Normalize(%s): error %q does not name the key", what, err)
		}
	}
	if _, err := Normalize("k", strings.Repeat("x", 100), 50); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("oversized value: error %v, want ErrInvalidValue", err)
	}
	if _, err := Normalize("k", strings.Repeat("x", 48), 50); err != nil {
		t.Errorf("value at the limit: %v", err)
	}
	nested := func(depth int) any {
		var v any = "leaf"
		for range depth {
			v = []any{v}
		}
		return v
	}
	if _, err := Normalize("k", nested(MaxDepth), 0); err != nil {
		t.Errorf("a value nested %d deep: %v", MaxDepth, err)
	}
	if _, err := Normalize("k", nested(5000), 0); !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "deep") {
		t.Errorf("a value nested 5,000 deep: error %v, want ErrInvalidValue saying how deep", err)
	}
}

func TestSplit(t *testing.T) {
	d, err := Split(map[string]any{"app:a": 1, "user:u": "x", "s": true, "temp:t": nil}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := Delta{App: map[string]any{"app:a": 1.0}, User: map[string]any{"user:u": "x"}, Session: map[string]any{"s": true}, Temp: map[string]any{"temp:t": nil}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Split = %#v, want %#v", d, want)
	}
	if got := d.Stored(); len(got) != 3 || got["temp:t"] != nil {
		t.Errorf("Stored() = %v, want the three non-temp keys", got)
	}
	if d, err := Split(map[string]any{"user:ok": 1, "app:": 2}, 0); err == nil || d.User != nil {
		t.Errorf("Split with one bad key = %v, %v; want an error and nothing", d, err)
	}
}

func TestMapIsolatesCallers(t *testing.T) {
	src := map[string]any{"user:prefs": map[string]any{"a": 1.0}}
	m := NewMap(src, 0)
	src["user:prefs"].(map[string]any)["a"] = "changed by caller"
	v, _ := m.Get("user:prefs")
	v.(map[string]any)["a"] = "changed through Get"
	for _, val := range m.All() {
		val.(map[string]any)["a"] = "changed through All"
	}
	if got, _ := m.Get("user:prefs"); !reflect.DeepEqual(got, map[string]any{"a": 1.0}) {
		t.Errorf("stored value changed from outside: %v", got)
	}
	if _, err := m.Get("missing"); !errors.Is(err, ErrStateKeyNotExist) {
		t.Errorf("Get(missing): %v", err)
	}
	if err := m.Set("user:", 1); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Set(bare prefix): %v", err)
	}
	if err := m.Set("x", make(chan int)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Set(channel): %v", err)
	}
	_ = m.Set("temp:a", 1)
	_ = m.Set("b", 2)
	m.DeleteScope(ScopeTemp)
	if got := m.Snapshot(); !reflect.DeepEqual(got, map[string]any{"user:prefs": map[string]any{"a": 1.0}, "b": 2.0}) {
		t.Errorf("after DeleteScope(temp): %v", got)
	}
}
