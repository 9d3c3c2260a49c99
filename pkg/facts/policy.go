package facts

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Policy is the one set of rules every way of writing a fact goes through:
// the SDK, REST and the agents' tools. Its secret and injection checks are
// hygiene against mistakes and casual abuse, not a security boundary: a
// determined writer can phrase around any pattern.
type Policy struct {
	MaxKeyChars   int           // default 128; at most 256, what the SQL stores hold
	MaxValueChars int           // default 1,000
	MaxScopeChars int           // total characters of values in one scope; default 4,000
	DefaultTTL    time.Duration // default 90 days
	MinTTL        time.Duration // default 1 hour
	MaxTTL        time.Duration // default 1 year
	// ReservedCategories may not be written (default: "system").
	ReservedCategories []string
}

// DefaultPolicy returns the defaults.
func DefaultPolicy() Policy {
	return Policy{MaxKeyChars: 128, MaxValueChars: 1000, MaxScopeChars: 4000,
		DefaultTTL: 90 * 24 * time.Hour, MinTTL: time.Hour, MaxTTL: 365 * 24 * time.Hour,
		ReservedCategories: []string{"system"}}
}

func refuse(code, format string, args ...any) error {
	return &ValidationError{Code: code, Message: fmt.Sprintf(format, args...)}
}

var (
	categoryShape = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	secretShapes  = []*regexp.Regexp{
		regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`),
		regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),                                  // AWS access key IDs
		regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`),                                    // Google API keys
		regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_-]{20,}`),                              // OpenAI/Stripe-style keys
		regexp.MustCompile(`\b(ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}`),         // GitHub tokens
		regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),                              // Slack tokens
		regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`), // JWTs
		regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|api[_-]?key|token)\s*[:=]\s*\S+`),
	}
	injectionShapes = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\b.{0,20}\b(previous|prior|above|earlier|all)\b.{0,20}\b(instructions?|rules|prompts?|messages?)`),
		regexp.MustCompile(`(?i)\byou are now\b|\bnew instructions?\s*:`),
		regexp.MustCompile(`(?i)<\|?(im_start|im_end|system|assistant|endoftext)\|?>`),
		// A role marker where a turn would start: a line's start, after a
		// tag or bracket, or a sentence's ("Has an assistant: Maria" is
		// kept).
		regexp.MustCompile(`(?i)(^|[\n>\]}|]|[.!?]\s)\s*(system|assistant|developer|user|human)\s*:`),
		// The tags of a prompt's sections, opening or closing one early.
		regexp.MustCompile(`(?i)</?\s*(facts?|system|instructions?|context|memory|memories|reference[_ -]?data|user|assistant|developer|human|tool|prompt|conversation|messages?|documents?|data)\s*>`),
		regexp.MustCompile(`(?i)\[/?(INST|SYS)\]|<</?SYS>>`),
		// Orders to call a tool by its name ("always call erase_user"), or
		// to destroy everyone's memory.
		regexp.MustCompile(`(?i)\b(call|invoke|execute|run|use)\s+(the\s+)?[a-z]+(_[a-z]+)+\b`),
		regexp.MustCompile(`(?i)\b(erase|delete|wipe|forget|remove)\b.{0,30}\b(every|all|each|other)\b.{0,20}\b(users?|people|accounts?|memor(y|ies))\b`),
	}
)

// normalize trims what a fact's writer sent and fills in defaults.
func (p Policy) normalize(req StoreRequest) StoreRequest {
	req.Key = strings.TrimSpace(req.Key)
	req.Value = cleanText(req.Value)
	req.Category = strings.TrimSpace(req.Category)
	if req.Category == "" {
		req.Category = DefaultCategory
	}
	if req.TTL == 0 {
		req.TTL = p.DefaultTTL
	}
	if req.Source.Kind == "" {
		req.Source.Kind = SourceWritten
	}
	if req.Source.By == "" && req.Source.Kind == SourceWritten {
		req.Source.By = "sdk"
	}
	return req
}

// cleanText is a value without the characters a reader cannot see that
// change what it reads: control characters but newline and tab (a NUL, an
// escape sequence) and the bidirectional overrides and isolates that
// reorder text on screen (U+202E shows "txt.exe" as "exe.txt"); trimmed.
// Text that is not UTF-8 is left for Check to refuse.
func cleanText(s string) string {
	if utf8.ValidString(s) {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && r != '\n' && r != '\t' || isBidiControl(r) {
				return -1
			}
			return r
		}, s)
	}
	return strings.TrimSpace(s)
}

// isBidiControl: the marks, embeddings, overrides and isolates of the
// Unicode bidirectional algorithm.
func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// maxSourceText bounds each of a source's names, maxSourceEvents its events.
const (
	maxSourceText   = 256
	maxSourceEvents = 100
)

func (p Policy) checkSource(src Source) error {
	if src.Kind != SourceWritten && src.Kind != SourceExtracted && src.Kind != SourceImported {
		return refuse("source_invalid", "source kind %q is not %s, %s or %s", src.Kind, SourceWritten, SourceExtracted, SourceImported)
	}
	if c := src.Claimed; c != nil {
		if src.Kind != SourceImported {
			return refuse("source_invalid", "only an imported version has a claimed source")
		}
		claimed := Source{Kind: c.Kind, By: c.By, Agent: c.Agent, SessionID: c.SessionID, EventIDs: c.EventIDs, Model: c.Model}
		if err := p.checkSource(claimed); err != nil {
			return err
		}
	}
	if len(src.EventIDs) > maxSourceEvents {
		return refuse("source_invalid", "a fact comes from at most %d events, not %d", maxSourceEvents, len(src.EventIDs))
	}
	for _, text := range append([]string{src.By, src.Agent, src.SessionID, src.Model}, src.EventIDs...) {
		if len(text) > maxSourceText || !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return refuse("source_invalid", "a source's names are at most %d bytes of UTF-8 without control characters", maxSourceText)
		}
	}
	return nil
}

// Check applies every rule but the scope budget to a normalized request.
func (p Policy) Check(req StoreRequest) error {
	req = p.normalize(req)
	if err := p.checkKey(req.Key); err != nil {
		return err
	}
	switch n := utf8.RuneCountInString(req.Value); {
	case req.Value == "":
		return refuse("value_required", "a fact needs a value")
	case !utf8.ValidString(req.Value):
		return refuse("value_invalid", "the value is not valid UTF-8")
	case n > p.MaxValueChars:
		return refuse("value_too_long", "the value has %d characters, over the limit of %d", n, p.MaxValueChars)
	}
	if !categoryShape.MatchString(req.Category) {
		return refuse("category_invalid", "category %q must be lowercase letters, digits, _ . - (at most 64)", req.Category)
	}
	if slices.Contains(p.ReservedCategories, req.Category) {
		return refuse("category_reserved", "category %q is reserved", req.Category)
	}
	for _, t := range req.Tags {
		if !categoryShape.MatchString(t) {
			return refuse("tag_invalid", "tag %q must be lowercase letters, digits, _ . - (at most 64)", t)
		}
	}
	switch {
	case req.TTL < 0:
		return refuse("ttl_invalid", "the TTL is negative: give a positive number of seconds, or 0 for the default")
	case req.TTL < p.MinTTL:
		return refuse("ttl_too_short", "a TTL of %s is under the minimum of %s", req.TTL, p.MinTTL)
	case req.TTL > p.MaxTTL:
		return refuse("ttl_too_long", "a TTL of %s is over the maximum of %s: facts are not kept forever", req.TTL, p.MaxTTL)
	}
	if err := p.checkSource(req.Source); err != nil {
		return err
	}
	for _, text := range []string{req.Key, req.Value} {
		if LooksLikeSecret(text) {
			return refuse("looks_like_secret", "this looks like a secret (a key, token or password): facts are not a place for secrets")
		}
		for _, re := range injectionShapes {
			if re.MatchString(text) {
				return refuse("looks_like_injection", "this looks like instructions to a model rather than a fact")
			}
		}
	}
	return nil
}

func (p Policy) checkKey(key string) error {
	switch n := utf8.RuneCountInString(key); {
	case key == "":
		return refuse("key_required", "a fact needs a key")
	case !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return refuse("key_invalid", "the key has invalid UTF-8 or control characters")
	case n > p.MaxKeyChars:
		return refuse("key_too_long", "the key has %d characters, over the limit of %d", n, p.MaxKeyChars)
	case strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "//"):
		return refuse("key_invalid", "key %q: / separates levels of a hierarchy, as in deploy/tool", key)
	}
	return nil
}

// LooksLikeSecret reports whether text has the shape of a credential: a
// private key, a cloud key, an API token, a JWT, a password= pair.
func LooksLikeSecret(text string) bool {
	for _, re := range secretShapes {
		if re.MatchString(text) {
			return true
		}
	}
	return false
}
