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

// MaxBytes is the longest ID, in bytes of UTF-8.
const MaxBytes = 128

// Check refuses an ID that is empty, longer than MaxBytes, not UTF-8 or
// holds a control character, with an errkind.InvalidArgument error that
// names what the ID is ("app name", "session ID").
func Check(what, id string) error {
	switch {
	case id == "":
		return invalid("%s is empty", what)
	case len(id) > MaxBytes:
		return invalid("%s is longer than %d bytes", what, MaxBytes)
	case !utf8.ValidString(id):
		return invalid("%s is not valid UTF-8", what)
	case strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("%s %q contains a control character", what, id)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errkind.InvalidArgument}, args...)...)
}
