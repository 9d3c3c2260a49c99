package config

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// referencePath is the configuration reference, made from the structs of
// this package (their YAML keys, their comments) and the zero
// configuration's values, so that it cannot drift from the code.
const referencePath = "../../docs/configuration.md"

// TestConfigReferenceIsCurrent checks docs/configuration.md against the
// structs; HECTOR_UPDATE_CONFIG_DOCS=1 writes it again.
func TestConfigReferenceIsCurrent(t *testing.T) {
	got := reference(t)
	if os.Getenv("HECTOR_UPDATE_CONFIG_DOCS") != "" {
		if err := os.WriteFile(referencePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s is not what the config structs say: HECTOR_UPDATE_CONFIG_DOCS=1 go test -run TestConfigReferenceIsCurrent ./pkg/config", referencePath)
	}
}

// A configuration key the documents name (`server.index.type`, in code
// spans) is one Hector reads.
func TestDocsNameOnlyKeysThatExist(t *testing.T) {
	keys := map[string]bool{}
	for _, e := range entries(t) {
		key := strings.ReplaceAll(e.key, "[]", "")
		keys[key] = true
		// Every prefix is a section a document may name.
		for k := key; strings.Contains(k, "."); {
			k = k[:strings.LastIndex(k, ".")]
			keys[k] = true
		}
	}
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md", "../../CONTRIBUTING.md")
	mention := regexp.MustCompile("`((?:server|databases|embedders|llms|agents)(?:\\.[a-z0-9_<>*\\[\\]]+)+)")
	checked := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(raw), -1) {
			key := m[1]
			// A map's entries are named by their names: agents.assistant.llm.
			for _, section := range []string{"databases", "embedders", "llms", "agents"} {
				if rest, ok := strings.CutPrefix(key, section+"."); ok && !strings.HasPrefix(rest, "<") {
					if _, after, found := strings.Cut(rest, "."); found {
						key = section + ".<name>." + after
					} else {
						key = section + ".<name>"
					}
				}
			}
			key = strings.ReplaceAll(key, "[]", "")
			checked++
			if !keys[key] && !keys[strings.TrimSuffix(key, ".")] {
				t.Errorf("%s names the configuration key %s, which Hector does not read", doc, m[1])
			}
		}
	}
	if checked < 10 {
		t.Errorf("found %d configuration keys in the documents: the pattern no longer sees them", checked)
	}
}

type entry struct{ key, kind, def, doc string }

// entries lists every key of the configuration, in the structs' order.
func entries(t *testing.T) []entry {
	t.Helper()
	comments := fieldComments(t, ".", "../workingmemory")
	t.Setenv(DataDirEnv, "")
	zero := Zero(Overrides{})
	var out []entry
	var walk func(typ reflect.Type, val reflect.Value, prefix string)
	walk = func(typ reflect.Type, val reflect.Value, prefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := strings.TrimPrefix(prefix+"."+name, ".")
			doc := readable(comments[typ.PkgPath()[strings.LastIndex(typ.PkgPath(), "/")+1:]+"."+typ.Name()+"."+f.Name], f.Name)
			var v reflect.Value
			if val.IsValid() {
				v = val.Field(i)
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
				if v.IsValid() && !v.IsNil() {
					v = v.Elem()
				} else {
					v = reflect.Value{}
				}
			}
			switch {
			case ft.Kind() == reflect.Struct:
				out = append(out, entry{key: key, kind: "section", doc: doc})
				walk(ft, v, key)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				out = append(out, entry{key: key, kind: "map of names to sections", doc: doc})
				walk(ft.Elem(), reflect.Value{}, key+".<name>")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				out = append(out, entry{key: key, kind: "list of sections", doc: doc})
				walk(ft.Elem(), reflect.Value{}, key+"[]")
			default:
				out = append(out, entry{key: key, kind: kindOf(ft), def: valueOf(v), doc: doc})
			}
		}
	}
	walk(reflect.TypeFor[Config](), reflect.ValueOf(*zero), "")
	return out
}

// readable is a field's comment as the reference says it: without the
// field's Go name it starts with ("MaxSteps bounds …" is "Bounds …").
func readable(doc, field string) string {
	rest, ok := strings.CutPrefix(doc, field+" ")
	if !ok {
		return doc
	}
	for _, verb := range []string{"is ", "are "} {
		rest = strings.TrimPrefix(rest, verb)
	}
	if rest == "" {
		return doc
	}
	return strings.ToUpper(rest[:1]) + rest[1:]
}

func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return kindOf(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list of " + kindOf(t.Elem()) + "s"
	case reflect.Map:
		return "map of names to " + kindOf(t.Elem()) + "s"
	}
	return t.String()
}

// valueOf is a key's value in the zero configuration, "" when unset.
func valueOf(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}

// fieldComments maps "package.Type.Field" to the field's comment, in the
// Go files of dirs (tests left out).
func fieldComments(t *testing.T, dirs ...string) map[string]string {
	out := map[string]string{}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, field := range st.Fields.List {
					text := strings.TrimSpace(field.Doc.Text() + " " + field.Comment.Text())
					for _, n := range field.Names {
						out[f.Name.Name+"."+ts.Name.Name+"."+n.Name] = strings.Join(strings.Fields(text), " ")
					}
				}
				return false
			})
		}
	}
	return out
}

func reference(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`# Configuration reference

Every key ` + "`hector serve`" + ` and the other commands read from a configuration file (` + "`--config FILE`" + `,
` + "`$HECTOR_CONFIG`" + `), made from the code's own structs and comments by a test
(` + "`HECTOR_UPDATE_CONFIG_DOCS=1 go test -run TestConfigReferenceIsCurrent ./pkg/config`" + `), so it says what
the code reads. "Zero configuration" is the value a key takes when no file is given (and, for a key a
file leaves out, in most cases too); ` + "`<name>`" + ` stands for an entry's name in a map, ` + "`[]`" + ` for each
item of a list. ` + "`${VAR}`" + ` and ` + "`${VAR:-default}`" + ` in a value are read from the environment, and
` + "`hector config validate FILE`" + ` checks a file. Working examples: ` + "`configs/`" + `.

| key | type | zero configuration | what it does |
|---|---|---|---|
`)
	for _, e := range entries(t) {
		def := e.def
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", e.key, e.kind, def, strings.ReplaceAll(e.doc, "|", "\\|"))
	}
	return b.String()
}
