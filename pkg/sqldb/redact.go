package sqldb

import (
	"net/url"
	"regexp"
	"strings"
)

var passwordField = regexp.MustCompile(`(?i)(password\s*=\s*)('[^']*'|\S+)`)

// redact removes the DSN's password from msg, whichever form the DSN takes.
func redact(msg, dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	for _, m := range passwordField.FindAllStringSubmatch(dsn, -1) {
		if pw := strings.Trim(m[2], "'"); pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return passwordField.ReplaceAllString(msg, "${1}xxxxx")
}
