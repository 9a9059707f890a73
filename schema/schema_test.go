package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/bingo/bingo-plugin-rpc/internal/testutil"
	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

var update = flag.Bool("update", false, "rewrite schema/plugin.json from Generate")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// generated is Generate's answer, computed once per test binary.
var generated = sync.OnceValues(Generate)

func mustGenerate(t *testing.T) []byte {
	t.Helper()
	b, err := generated()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return b
}

// compiledSchema is the generated document loaded into a real validator.
type compiledSchema struct {
	c    *sjs.Compiler
	root *sjs.Schema
	doc  map[string]any
}

func compileSchema(t *testing.T, b []byte) *compiledSchema {
	t.Helper()
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource(ID, inst); err != nil {
		t.Fatal(err)
	}
	// Compile also validates the document against the draft 2020-12
	// meta-schema named by its $schema.
	root, err := c.Compile(ID)
	if err != nil {
		t.Fatalf("compiling the schema: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return &compiledSchema{c: c, root: root, doc: doc}
}

// schemaUnderTest compiles the generated document.
func schemaUnderTest(t *testing.T) *compiledSchema {
	t.Helper()
	return compileSchema(t, mustGenerate(t))
}

// at compiles the subschema at ref ("#/$defs/View").
func (s *compiledSchema) at(t *testing.T, ref string) *sjs.Schema {
	t.Helper()
	sch, err := s.c.Compile(ID + ref)
	if err != nil {
		t.Fatalf("compiling %s: %v", ref, err)
	}
	return sch
}

// tableRef is the $ref of params or result of name in a table of the
// document: "methods", "notifications" or "hostService".
func (s *compiledSchema) tableRef(t *testing.T, table, name, field string) string {
	t.Helper()
	tab, _ := s.doc[table].(map[string]any)
	if table == "hostService" {
		tab, _ = tab["methods"].(map[string]any)
	}
	entry, ok := tab[name].(map[string]any)
	if !ok {
		t.Fatalf("%s has no entry %q", table, name)
	}
	f, _ := entry[field].(map[string]any)
	ref, _ := f["$ref"].(string)
	if ref == "" {
		t.Fatalf("%s.%s has no %s $ref", table, name, field)
	}
	return ref
}

func validate(sch *sjs.Schema, line []byte) error {
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(inst)
}

func TestGeneratedSchemaIsCurrent(t *testing.T) {
	want := mustGenerate(t)
	if *update {
		if err := os.WriteFile("plugin.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("plugin.json")
	if err != nil {
		t.Fatalf("%v: run go run ./schema/gen", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		line := 0
		for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
			line++
		}
		t.Errorf("schema/plugin.json is not what Generate produces (first difference at line %d): run go run ./schema/gen (or go test ./schema -run TestGeneratedSchemaIsCurrent -update)", line+1)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a := mustGenerate(t)
	for range 3 {
		b, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two runs of Generate differ")
		}
	}
}

func TestDocumentHeader(t *testing.T) {
	b := mustGenerate(t)
	s := schemaUnderTest(t)
	if !bytes.HasPrefix(b, []byte("{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n  \"$id\": \""+ID+"\",\n")) {
		t.Errorf("the document does not open with $schema (2020-12) and $id, indented by two spaces:\n%s", b[:min(200, len(b))])
	}
	if !bytes.HasSuffix(b, []byte("}\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
		t.Error("the document does not end in exactly one newline")
	}
	desc, _ := s.doc["description"].(string)
	if !strings.Contains(desc, "Generated") || !strings.Contains(desc, fmt.Sprintf("protocol version %d", protocol.Version)) {
		t.Errorf("description does not say it is generated and for which protocol: %q", desc)
	}
	if v, _ := s.doc["protocol"].(float64); int(v) != protocol.Version {
		t.Errorf("protocol = %v, want %d", s.doc["protocol"], protocol.Version)
	}
	if s.doc["title"] == "" {
		t.Error("no title")
	}
}

// TestEveryProtocolNameIsInTheSchema: a method, notification or host door
// added to protocol without its row in schema.go (and a regenerated file)
// fails here.
func TestEveryProtocolNameIsInTheSchema(t *testing.T) {
	s := schemaUnderTest(t)
	methods, _ := s.doc["methods"].(map[string]any)
	notes, _ := s.doc["notifications"].(map[string]any)
	hostTab, _ := s.doc["hostService"].(map[string]any)
	host, _ := hostTab["methods"].(map[string]any)
	if hostTab["key"] != protocol.HostServiceKey {
		t.Errorf("hostService.key = %v, want %s", hostTab["key"], protocol.HostServiceKey)
	}

	// The root oneOf's branches, by method.
	branches := map[string]string{}
	for _, b := range s.doc["oneOf"].([]any) {
		bm := b.(map[string]any)
		props, _ := bm["properties"].(map[string]any)
		m, _ := props["method"].(map[string]any)
		if c, ok := m["const"].(string); ok {
			branches[c] = bm["title"].(string)
		}
	}

	check := func(kind string, table map[string]any, consts map[string]string, branchSuffix string) {
		t.Helper()
		if len(consts) == 0 {
			t.Fatalf("found no %s constants in protocol.go", kind)
		}
		for name, v := range consts {
			if _, ok := table[v]; !ok {
				t.Errorf("protocol.%s = %q is not in the schema's %s: add it to schema.go and run go run ./schema/gen", name, v, kind)
			}
			if branchSuffix != "" && branches[v] != v+" "+branchSuffix {
				t.Errorf("protocol.%s = %q has no %s branch in the root oneOf (have %q)", name, v, branchSuffix, branches[v])
			}
		}
		if len(table) != len(consts) {
			t.Errorf("the schema's %s has %d entries, protocol.go %d", kind, len(table), len(consts))
		}
	}
	check("methods", methods, testutil.ProtocolConstants(t, "Method"), "request")
	check("notifications", notes, testutil.ProtocolConstants(t, "Notify"), "notification")
	hostNames := testutil.ProtocolConstants(t, "Host")
	delete(hostNames, "HostServiceKey")
	check("hostService", host, hostNames, "")

	for name, e := range methods {
		d := e.(map[string]any)["direction"]
		if d != "host→plugin" && d != "plugin→host" && d != "both" {
			t.Errorf("methods[%q].direction = %v", name, d)
		}
	}
	if d := methods[protocol.MethodServiceCall].(map[string]any)["direction"]; d != "both" {
		t.Errorf("service/call direction = %v, want both", d)
	}
	if d := notes[protocol.NotifyToolProgress].(map[string]any)["direction"]; d != "plugin→host" {
		t.Errorf("tool/progress direction = %v, want plugin→host", d)
	}
}

// TestEveryProtocolTypeIsDefined: every envelope type of protocol.go has
// its definition, and every $ref in the document resolves.
func TestEveryProtocolTypeIsDefined(t *testing.T) {
	s := schemaUnderTest(t)
	defs := s.doc["$defs"].(map[string]any)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "protocol", "protocol.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			if ts.Assign != 0 { // an alias: defined under the aliased type's name
				continue
			}
			n++
			if _, ok := defs[ts.Name.Name]; !ok {
				t.Errorf("protocol.%s has no $defs entry", ts.Name.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no types in protocol.go")
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				s.at(t, ref)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(s.doc)
}

// TestRawMessagesAreAnyJSON: json.RawMessage fields take any JSON (or an
// object where the Go tag says so), never "array of integers".
func TestRawMessagesAreAnyJSON(t *testing.T) {
	s := schemaUnderTest(t)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if it, ok := v["items"].(map[string]any); ok && it["type"] == "integer" {
				t.Errorf("%s is an array of integers: a json.RawMessage reflected as bytes", path)
			}
			for k, x := range v {
				walk(path+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s/%d", path, i), x)
			}
		}
	}
	walk("#", s.doc)

	anyJSON := []string{`"text"`, `3`, `[1,2]`, `{"path":"x"}`, `null`, `true`}
	for _, c := range []struct{ def, field string }{
		{"ToolCallParams", "input"},
		{"HookDecideParams", "payload"},
		{"HookObserve", "payload"},
		{"HookDecision", "value"},
		{"ServiceCallParams", "params"},
		{"ServiceCallResult", "result"},
		{"ToolCallRequest", "input"},
		// plugins.<name> is whatever the person wrote ("fast", 3, […]).
		{"InitializeParams", "config"},
	} {
		sch := s.at(t, "#/$defs/"+c.def+"/properties/"+c.field)
		for _, v := range anyJSON {
			if err := validate(sch, []byte(v)); err != nil {
				t.Errorf("%s.%s refuses %s: %v", c.def, c.field, v, err)
			}
		}
	}
	// type=object in the Go tag: an object.
	inputSchema := s.at(t, "#/$defs/ToolSpec/properties/inputSchema")
	for v, want := range map[string]bool{`{"type":"object"}`: true, `[1]`: false, `"x"`: false} {
		if err := validate(inputSchema, []byte(v)); (err == nil) != want {
			t.Errorf("ToolSpec inputSchema %s: valid=%v, want %v", v, err == nil, want)
		}
	}
}

func TestDescriptionsComeFromGoComments(t *testing.T) {
	b := mustGenerate(t)
	s := schemaUnderTest(t)
	defs := s.doc["$defs"].(map[string]any)
	desc := func(path ...string) string {
		var v any = defs
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		d, _ := v.(map[string]any)["description"].(string)
		return d
	}
	if got, want := desc("ToolCallParams"), "ToolCallParams runs a tool."; got != want {
		t.Errorf("ToolCallParams description = %q, want %q", got, want)
	}
	if got, want := desc("InitializeParams", "properties", "config"), "Config is the person's settings value plugins.<name>, any JSON exactly as written, or null."; got != want {
		t.Errorf("config description = %q, want %q", got, want)
	}
	if got := desc("ToolTraits"); !strings.Contains(got, "The zero value is the untrusted default") || strings.Contains(got, "\n") {
		t.Errorf("ToolTraits description = %q: want the whole comment, lines joined", got)
	}
	for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
		if bytes.Contains(b, []byte(esc)) {
			t.Errorf("the document holds %s: HTML escaping left in", esc)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`"a \u003cb\u003e \u0026 c"`: `"a <b> & c"`,
		`"\\u003c"`:                  `"\\u003c"`, // an escaped backslash, then text
		`"\\\u003c"`:                 `"\\<"`,
		`"\n\u00e9"`:                 `"\n\u00e9"`,
		`"end\`:                      `"end\`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestUnionTableMustMatchTheType: a kind or a field that sdk grows and the
// union table does not place makes Generate fail rather than emit a schema
// that forbids it.
func TestUnionTableMustMatchTheType(t *testing.T) {
	view := func() *jsonschema.Schema {
		r := &jsonschema.Reflector{Anonymous: true}
		return r.Reflect(sdk.View{}).Definitions["View"]
	}
	var u union
	for _, x := range unions() {
		if x.def == "View" {
			u = x
		}
	}
	if err := u.apply(view()); err != nil {
		t.Fatalf("the real table fails: %v", err)
	}

	missingKind := u
	missingKind.Kinds = u.Kinds[:len(u.Kinds)-1]
	if err := missingKind.apply(view()); err == nil || !strings.Contains(err.Error(), "kinds") {
		t.Errorf("a kind missing from the table: err = %v", err)
	}

	def := view()
	def.Properties.Set("chart", &jsonschema.Schema{Type: "string"})
	if err := u.apply(def); err == nil || !strings.Contains(err.Error(), `"chart"`) {
		t.Errorf("a field no kind owns: err = %v", err)
	}

	wrongField := u
	wrongField.Kinds = append([]protocol.UnionKind{{Value: "text", Fields: []string{"body"}}}, u.Kinds[1:]...)
	if err := wrongField.apply(view()); err == nil || !strings.Contains(err.Error(), `"body"`) {
		t.Errorf("a field the type lacks: err = %v", err)
	}
}

// TestNullWhereGoSendsNull: a nil slice, map or RawMessage that is not
// omitempty is null on the wire, and the schema says so; an omitempty one
// is never null.
func TestNullWhereGoSendsNull(t *testing.T) {
	s := schemaUnderTest(t)
	for _, c := range []struct {
		def  string
		v    any
		want bool
	}{
		{"CommandCompleteResult", protocol.CommandCompleteResult{}, true},
		{"InitializeParams", protocol.InitializeParams{Protocol: 5}, true},
		{"CompactorCompactParams", protocol.CompactorCompactParams{ID: "c", Reason: "budget"}, true},
		{"ToolCallResult", protocol.ToolCallResult{}, true},
		{"InitializeResult", json.RawMessage(`{"protocol":5,"name":"x","version":"1","tools":null}`), false},
		{"View", json.RawMessage(`{"kind":"table","rows":null}`), false},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(s.at(t, "#/$defs/"+c.def), b); (err == nil) != c.want {
			t.Errorf("%s %s: valid=%v, want %v (%v)", c.def, b, err == nil, c.want, err)
		}
	}
}

// TestNamesDoNotCollide: two Go types of one name would share a definition;
// the generator refuses that.
func TestNamesDoNotCollide(t *testing.T) {
	g := newGenerator(nil)
	type View struct{ X int }
	g.ref(sdk.ToolOutput{}) // reflects sdk.View
	g.ref(View{})
	if err := g.finish(); err == nil || !strings.Contains(err.Error(), `"View"`) {
		t.Errorf("err = %v, want a collision on View", err)
	}
}
