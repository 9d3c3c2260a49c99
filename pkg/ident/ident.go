// Package ident checks the IDs Hector keeps memory under (app names, user
// IDs, session and event IDs), the same way in every service: an ID one
// service stores, every other can take.
package ident

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/errkind"
)

// MaxChars is the longest ID, in characters: what the SQL stores' columns
// hold.
const MaxChars = 128

// Check refuses an ID that is empty, longer than MaxChars, not UTF-8 or
// holds a control character, with an errkind.InvalidArgument error that
// names what the ID is ("app name", "session ID").
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
	case strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Sprintf("%s %q contains a control character", what, id)
	}
	return ""
}
