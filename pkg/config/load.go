package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
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

	bad string // the value found wrong (not one of a set, or naming nothing defined)
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
		return nil, []error{fmt.Errorf("%s: %w", name, err)}
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
			return nil, append(errs, fmt.Errorf("%s: %w", name, err))
		}
		for _, m := range te.Errors {
			errs = append(errs, typeError(name, &root, m))
		}
	}
	if o.DataDir != "" {
		cfg.Server.DataDir = o.DataDir
	}
	cfg.applyDefaults()
	found := cfg.validate()
	for _, e := range found {
		if e.Unset == "" && fromUnset(e.Path, errs) || derived(e, found, &root) {
			continue
		}
		e.File = name
		e.Line, _ = lineOf(&root, strings.Split(e.Path, "."))
		errs = append(errs, e)
	}
	// In the file's order, as an editor goes through them.
	slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(lineOfError(a), lineOfError(b)) })
	return &cfg, errs
}

func lineOfError(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Line
	}
	return 0
}

// derived reports whether e only follows from another mistake: it names
// a value another error found wrong at a key the file holds (a misspelt
// index type, which a check of its vectors then repeats), while e's own
// key is one the file leaves out (its default follows the wrong value) or
// e finds nothing wrong of its own.
func derived(e *Error, all []*Error, root *yaml.Node) bool {
	_, mine := lineOf(root, strings.Split(e.Path, "."))
	for _, f := range all {
		if f == e || f.bad == "" || !strings.Contains(e.Msg, f.bad) {
			continue
		}
		if _, theirs := lineOf(root, strings.Split(f.Path, ".")); theirs && (!mine || e.bad == "") {
			return true
		}
	}
	return false
}

// typeError makes one of the YAML library's complaints ("line 7: field x
// not found in type config.Server") an Error at its key and line, with a
// near miss named.
func typeError(name string, root *yaml.Node, msg string) error {
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: %s", name, msg)
	}
	line, _ := strconv.Atoi(m[1])
	e := &Error{File: name, Line: line, Msg: m[2], Path: pathAt(root, line, "", "")}
	if u := wrongType.FindStringSubmatch(m[2]); u != nil {
		want := u[3]
		if w, ok := goKinds[want]; ok {
			want = w
		} else if strings.HasPrefix(want, "config.") || strings.HasPrefix(want, "map[") {
			want = "a map"
		}
		got := yamlKinds[u[1]]
		if u[2] != "" {
			got += " (" + u[2] + ")"
			e.Path = pathAt(root, line, "", u[2])
		}
		e.Msg = fmt.Sprintf("a %s where %s is wanted", got, want)
	}
	if f := unknownField.FindStringSubmatch(m[2]); f != nil {
		e.Path = pathAt(root, line, f[1], "")
		e.Msg = fmt.Sprintf("unknown key %q%s", f[1], didYouMean(f[1], keysOf(f[2])))
		if !strings.Contains(e.Msg, "did you mean") {
			e.Msg += ": every key is in docs/configuration.md"
		}
	}
	return e
}

var (
	yamlLine  = regexp.MustCompile(`^line (\d+): (.*)$`)
	wrongType = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`([^`]*)` )?into (\\S+)$")
	yamlKinds = map[string]string{"map": "map", "seq": "list", "str": "string", "int": "number", "float": "number", "bool": "true or false"}
	goKinds   = map[string]string{"string": "a string", "int": "a whole number", "int64": "a whole number", "float64": "a number",
		"bool": "true or false", "[]string": "a list of strings", "time.Duration": "a duration (30s, 5m)"}
	unknownField = regexp.MustCompile(`field (\S+) not found in type config\.(\w+)`)
)

// pathAt is the dotted path of the key named key (any key, given "") on
// line, whose value is value (any value, given ""), "" if none is.
func pathAt(n *yaml.Node, line int, key, value string) string {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Line == line && (key == "" || k.Value == key) && (value == "" || v.Kind == yaml.ScalarNode && v.Value == value) {
				return k.Value
			}
			if p := pathAt(v, line, key, value); p != "" {
				return k.Value + "." + p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := pathAt(c, line, key, value); p != "" {
				return strconv.Itoa(i) + "." + p
			}
		}
	}
	return ""
}

// keysOf lists the keys a section of the configuration takes, by the name
// of its Go type, as the YAML library names it in its complaints.
func keysOf(typeName string) []string {
	var keys []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if t.Name() == typeName && key != "" && key != "-" {
				keys = append(keys, key)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	return keys
}

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

// lineOf finds the line of a dotted key path, or of its nearest ancestor
// present, and says whether the file holds the key itself.
func lineOf(root *yaml.Node, path []string) (int, bool) {
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
			return line, false
		}
	}
	return line, true
}
