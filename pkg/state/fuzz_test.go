package state

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzScopeOf(f *testing.F) {
	for _, s := range []string{"", "app:", "app:x", "user:", "user:y", "temp:", "temp:z", "plain", "a\x00", "\xff", "user:user:", "app:app:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		scope, err := ScopeOf(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ScopeOf(%q): error %v does not wrap ErrInvalidKey", key, err)
			}
			valid := key != "" && utf8.RuneCountInString(key) <= MaxKeyChars && utf8.ValidString(key) && !strings.ContainsFunc(key, isControl) &&
				key != KeyPrefixApp && key != KeyPrefixUser && key != KeyPrefixTemp
			if valid {
				t.Fatalf("ScopeOf(%q) rejected a valid key: %v", key, err)
			}
			return
		}
		want := ScopeSession
		switch {
		case strings.HasPrefix(key, KeyPrefixApp):
			want = ScopeApp
		case strings.HasPrefix(key, KeyPrefixUser):
			want = ScopeUser
		case strings.HasPrefix(key, KeyPrefixTemp):
			want = ScopeTemp
		}
		if scope != want {
			t.Fatalf("ScopeOf(%q) = %v, want %v", key, scope, want)
		}
	})
}

// FuzzSplitApply checks that splitting a delta by scope loses and misplaces
// nothing, and that applying two deltas in turn is last-write-wins per key
// with nil deleting.
func FuzzSplitApply(f *testing.F) {
	f.Add(`{"app:a":1,"user:b":"x","c":true,"temp:d":null}`, `{"c":null,"user:b":[1,2],"e":{"f":1}}`)
	f.Add(`{"user:":1}`, `{}`)
	f.Add(`{"a":1e308}`, `{"a":null}`)
	f.Fuzz(func(t *testing.T, first, second string) {
		var d1, d2 map[string]any
		if json.Unmarshal([]byte(first), &d1) != nil || json.Unmarshal([]byte(second), &d2) != nil {
			return
		}
		s1, err1 := Split(d1, 0)
		s2, err2 := Split(d2, 0)
		if err1 != nil || err2 != nil {
			for _, e := range []error{err1, err2} {
				if e != nil && !errors.Is(e, ErrInvalidKey) && !errors.Is(e, ErrInvalidValue) {
					t.Fatalf("Split error %v wraps neither ErrInvalidKey nor ErrInvalidValue", e)
				}
			}
			return
		}
		for _, part := range []struct {
			m     map[string]any
			scope Scope
		}{{s1.App, ScopeApp}, {s1.User, ScopeUser}, {s1.Session, ScopeSession}, {s1.Temp, ScopeTemp}} {
			for k := range part.m {
				if got, _ := ScopeOf(k); got != part.scope {
					t.Fatalf("key %q of scope %v was put in %v", k, got, part.scope)
				}
			}
		}
		merged := Merge(s1.App, s1.User, s1.Session, s1.Temp)
		if !reflect.DeepEqual(merged, d1) {
			t.Fatalf("Merge(Split(d)) = %v, want %v", merged, d1)
		}
		view := map[string]any{}
		Apply(view, merged)
		Apply(view, Merge(s2.App, s2.User, s2.Session, s2.Temp))
		for _, k := range append(keys(d1), keys(d2)...) {
			want, inSecond := d2[k]
			if !inSecond {
				want = d1[k]
			}
			got, present := view[k]
			if want == nil && present {
				t.Fatalf("key %q should be deleted, has %v", k, got)
			}
			if want != nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("key %q = %v, want %v", k, got, want)
			}
		}
	})
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
