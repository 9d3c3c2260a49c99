// Package jsondepth measures how deeply JSON text nests, without decoding
// it: a value nested thousands deep is valid JSON, but costs every later
// reader of it (and a recursive one its stack).
package jsondepth

// Exceeds reports whether raw, JSON text, nests objects and arrays more
// than max deep. Brackets inside strings do not count.
func Exceeds(raw []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
