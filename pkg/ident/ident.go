// Package ident checks the IDs Hector keeps memory under (app names, user
// IDs, session and event IDs), the same way in every service: an ID one
// service stores, every other can take.
package ident

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/errkind"
)

// MaxChars is the longest ID, in characters: what the SQL stores' columns
// hold.
const MaxChars = 128

// Check refuses an ID that is empty or blank, longer than MaxChars, not
// UTF-8, or holds a character a reader cannot see or that changes how the
// text around it shows (see unseen), with an errkind.InvalidArgument error
// that names what the ID is ("app name", "session ID"), the character and
// its position.
func Check(what, id string) error {
	if problem := Problem(what, id); problem != "" {
		return fmt.Errorf("%w: %s", errkind.InvalidArgument, problem)
	}
	return nil
}

// Problem says what is wrong with an ID, "" when nothing is: for a service
// that reports refusals in errors of its own.
func Problem(what, id string) string {
	switch {
	case id == "":
		return what + " is empty"
	case utf8.RuneCountInString(id) > MaxChars:
		return fmt.Sprintf("%s is longer than %d characters", what, MaxChars)
	case !utf8.ValidString(id):
		return what + " is not valid UTF-8"
	case strings.TrimSpace(id) == "":
		return what + " is only spaces"
	}
	pos := 0
	for _, r := range id {
		pos++
		if unseen(r) {
			return fmt.Sprintf("%s %q holds %U (%s) at character %d: IDs and authors take printable characters only", what, id, r, kind(r), pos)
		}
	}
	return ""
}

// unseen reports whether r is a character a reader does not see as
// itself: the C0 and C1 controls, line and paragraph separators, and the
// format characters (zero-width spaces and joiners, the byte order mark,
// bidirectional overrides and isolates, which reorder the text around
// them on screen).
func unseen(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

func kind(r rune) string {
	switch {
	case unicode.IsControl(r):
		return "a control character"
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c:
		return "a bidirectional control"
	case unicode.Is(unicode.Cf, r):
		return "an invisible format character"
	}
	return "a line or paragraph separator"
}

// Pattern is the rule Check applies, as a JSON Schema (ECMA 262) pattern
// for API documents, without lookahead, which Go's validators lack: one
// character at least that is not a space, and none of the characters
// refused, those of the Basic Multilingual Plane written out (the few
// refused past it, such as the tag characters U+E0000 to U+E007F, only
// Check knows). Its length is MaxChars.
var Pattern = func() string {
	refused := bmpClass()
	return `^[^` + refused + `]*[^` + refused + `\s][^` + refused + `]*$`
}()

// bmpClass is the ranges of the characters unseen refuses in the Basic
// Multilingual Plane, for a character class: the characters themselves,
// which every regular expression engine takes (an API document's JSON
// escapes them), where \uXXXX is ECMA's and Python's, not Go's.
func bmpClass() string {
	var b strings.Builder
	for r := rune(0); r <= 0xffff; r++ {
		if !unseen(r) {
			continue
		}
		from := r
		for r+1 <= 0xffff && unseen(r+1) {
			r++
		}
		b.WriteRune(from)
		if r > from {
			b.WriteRune('-')
			b.WriteRune(r)
		}
	}
	return b.String()
}
