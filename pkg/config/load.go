package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a problem in a configuration file, at a key and line.
type Error struct {
	File string
	Line int
	Path string // the key, dotted: agents.assistant.llm
	Msg  string
	// Unset names the environment variable that is not set, when that is
	// the mistake: the file may be right, and only this environment lack it.
	Unset string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Overrides are command-line settings that win over the file. They are
// applied before the defaults, so everything derived from them follows.
type Overrides struct {
	// DataDir replaces server.data_dir. It is also what ${HECTOR_DATA_DIR}
	// expands to, so paths the file writes under that variable follow it,
	// as the paths it leaves out do.
	DataDir string
}

// Load reads and checks a configuration file.
func Load(path string, o Overrides) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, raw, o)
}

// Parse reads and checks configuration text; name is used in errors.
func Parse(name string, raw []byte, o Overrides) (*Config, error) {
	cfg, errs := parse(name, raw, o)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

// Validate checks a configuration file as Load does, but tells apart the
// environment variables it needs that are not set here (unset: a file
// checked away from where it runs lacks its secrets) from every other
// mistake (err).
func Validate(path string, o Overrides) (unset []*Error, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	_, errs := parse(path, raw, o)
	var others []error
	for _, e := range errs {
		var ce *Error
		if errors.As(e, &ce) && ce.Unset != "" {
			unset = append(unset, ce)
		} else {
			others = append(others, e)
		}
	}
	return unset, errors.Join(others...)
}

// parse reads and checks configuration text, returning every mistake.
func parse(name string, raw []byte, o Overrides) (*Config, []error) {
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, []error{yamlError(name, err)}
	}
	if len(root.Content) == 0 { // an empty file is the zero configuration
		root = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	lookup := os.LookupEnv
	if o.DataDir != "" {
		lookup = func(v string) (string, bool) {
			if v == DataDirEnv {
				return o.DataDir, true
			}
			return os.LookupEnv(v)
		}
	}
	// Every mistake is reported at once: variables that are not set (their
	// values are empty meanwhile), values of the wrong type, and what the
	// checks of each section find.
	var errs []error
	expandEnv(name, &root, "", lookup, &errs)
	// Decode again from the expanded tree with unknown keys refused.
	expanded, err := yaml.Marshal(&root)
	if err != nil {
		return nil, []error{err}
	}
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true)
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) { // nothing was decoded
			return nil, append(errs, yamlError(name, err))
		}
		errs = append(errs, yamlError(name, err))
	}
	if o.DataDir != "" {
		cfg.Server.DataDir = o.DataDir
	}
	cfg.applyDefaults()
	for _, e := range cfg.validate() {
		if e.Unset == "" && fromUnset(e.Path, errs) {
			continue
		}
		e.File = name
		e.Line = lineOf(&root, strings.Split(e.Path, "."))
		errs = append(errs, e)
	}
	return &cfg, errs
}

// yamlError keeps the YAML library's line numbers ("line 7: field x not
// found in type config.Agent") and says which file.
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = name + ": " + unknownField.ReplaceAllString(m, `unknown key "$1" in $2: check its spelling against configs/default.yaml`)
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return fmt.Errorf("%s: %w", name, err)
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type config\.(\w+)`)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default} in scalar values, adding an
// error to errs for each variable that is not set, at the key path of its
// value. It works on parsed values, so a variable's content can never
// change the structure.
func expandEnv(name string, n *yaml.Node, path string, lookup func(string) (string, bool), errs *[]error) {
	switch n.Kind {
	case yaml.ScalarNode:
		expanded := envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			if v, ok := lookup(m[1]); ok {
				return v
			}
			if m[2] != "" {
				return m[3]
			}
			*errs = append(*errs, &Error{File: name, Line: n.Line, Path: path, Unset: m[1],
				Msg: fmt.Sprintf("environment variable %s is not set (write ${%s:-default} for a default)", m[1], m[1])})
			return ""
		})
		if expanded != n.Value {
			// Typed again from its value: port: "${PORT}" becomes a number.
			// Strings take any scalar, so a key that looks like one is safe.
			n.Tag, n.Style = "", 0
		}
		n.Value = expanded
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandEnv(name, n.Content[i+1], join(path, n.Content[i].Value), lookup, errs)
		}
	default:
		for i, c := range n.Content {
			if n.Kind == yaml.SequenceNode {
				expandEnv(name, c, join(path, fmt.Sprint(i)), lookup, errs)
			} else {
				expandEnv(name, c, path, lookup, errs)
			}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fromUnset reports whether a mistake at path is one that an unset
// variable makes, at path or below it (an API key that is empty because
// its variable is not set): that variable's error says it already.
func fromUnset(path string, errs []error) bool {
	for _, e := range errs {
		var ce *Error
		if errors.As(e, &ce) && ce.Unset != "" && (ce.Path == path || strings.HasPrefix(ce.Path, path+".")) {
			return true
		}
	}
	return false
}

// lineOf finds the line of a dotted key path, or of its nearest ancestor present.
func lineOf(root *yaml.Node, path []string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}
