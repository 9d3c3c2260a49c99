package ident

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/errkind"
)

func TestCheck(t *testing.T) {
	for id, ok := range map[string]bool{
		"alice": true, "chat:42": true, "café/été": true, "a trip to Lisbon": true, strings.Repeat("x", MaxChars): true, strings.Repeat("é", MaxChars): true,
		"": false, strings.Repeat("x", MaxChars+1): false, strings.Repeat("é", MaxChars+1): false, "a\x00b": false, "tab\there": false, "\xff": false, "del\x7f": false,
		"   ": false, "nel\u0085": false, "csi\u009b": false, "rlo\u202eexe": false, "lri\u2066x": false, "zw\u200bsp": false, "\ufeffbom": false,
		"ali\nce": false, "ls\u2028": false, "soft\u00adhyphen": false, "emoji 🐝": true, "日本": true,
	} {
		err := Check("user ID", id)
		if (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok %v", id, err, ok)
		}
		if err != nil && (!errors.Is(err, errkind.InvalidArgument) || !strings.Contains(err.Error(), "user ID")) {
			t.Errorf("Check(%q): %v is not an invalid argument naming the user ID", id, err)
		}
	}
}

// A refusal names the character and where it is.
func TestCheckNamesTheCharacter(t *testing.T) {
	err := Check("session ID", "ab\u202ec")
	if err == nil || !strings.Contains(err.Error(), "U+202E") || !strings.Contains(err.Error(), "bidirectional") || !strings.Contains(err.Error(), "character 3") {
		t.Errorf("Check = %v, want U+202E, a bidirectional control, at character 3", err)
	}
}

func FuzzCheck(f *testing.F) {
	for _, seed := range []string{"alice", "", "a\x00", "\xff\xfe", "chat:1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if Check("id", id) != nil {
			return
		}
		if strings.TrimSpace(id) == "" || utf8.RuneCountInString(id) > MaxChars || !utf8.ValidString(id) || strings.ContainsFunc(id, unseen) ||
			strings.ContainsFunc(id, func(r rune) bool {
				return r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r == 0xfeff || r == 0x200b
			}) {
			t.Errorf("Check accepted %q", id)
		}
	})
}

// Pattern, the rule as API documents state it, refuses exactly the
// characters of the Basic Multilingual Plane Check refuses, and an ID of
// spaces.
func TestPatternSaysWhatCheckDoes(t *testing.T) {
	re := regexp.MustCompile(Pattern)
	for r := rune(0); r <= 0xffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // surrogates are no characters
		}
		id := "a" + string(r)
		if matched, checked := re.MatchString(id), Check("id", id) == nil; matched != checked {
			t.Errorf("%U: Pattern takes it %v, Check %v", r, matched, checked)
		}
	}
	for id, ok := range map[string]bool{"   ": false, " a ": true, "": false} {
		if re.MatchString(id) != ok {
			t.Errorf("Pattern takes %q: %v, want %v", id, !ok, ok)
		}
	}
}
