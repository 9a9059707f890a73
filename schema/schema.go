package schema

//go:generate go run ./gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/bingo/bingo-plugin-rpc/protocol"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

// ID is the document's $id: validators register the document under it, and
// references into it ("ID#/$defs/View") resolve against it.
const ID = "https://bingo.dev/schema/plugin.json"

// File is where the generated document lives, relative to the module root.
const File = "schema/plugin.json"

// modulePath is this module's import path: the prefix of every reflected
// type's package, and how ModuleRoot recognises the right go.mod.
const modulePath = "github.com/bingo/bingo-plugin-rpc"

// Directions, spelt as the spec's tables spell them.
const (
	hostToPlugin = "host→plugin"
	pluginToHost = "plugin→host"
	bothWays     = "both"
)

// method is one row of the spec's tables: a request (result non-nil) or a
// notification (result nil). params and result are zero values of the Go
// types that travel, reflected for their schema.
type method struct {
	name      string
	direction string
	about     string
	params    any
	result    any
}

// requests is the spec's method table, in its order.
func requests() []method {
	return []method{
		{protocol.MethodInitialize, hostToPlugin, "The handshake. The plugin answers with what it is and everything it contributes; a protocol the host does not speak is refused.",
			protocol.InitializeParams{}, protocol.InitializeResult{}},
		{protocol.MethodToolCall, hostToPlugin, "Run a tool. The plugin may send tool/progress for the call while it runs.",
			protocol.ToolCallParams{}, protocol.ToolCallResult{}},
		{protocol.MethodCommandRun, hostToPlugin, "Run a slash command.",
			protocol.CommandRunParams{}, protocol.CommandRunResult{}},
		{protocol.MethodCommandComplete, hostToPlugin, "Complete a command's partial arguments.",
			protocol.CommandCompleteParams{}, protocol.CommandCompleteResult{}},
		{protocol.MethodContextContribute, hostToPlugin, "Ask a context contributor for pieces of the model's context.",
			protocol.ContextContributeParams{}, protocol.ContextContributeResult{}},
		{protocol.MethodCompactorCompact, hostToPlugin, "Ask a compactor to shorten a conversation.",
			protocol.CompactorCompactParams{}, protocol.CompactorCompactResult{}},
		{protocol.MethodProviderStream, hostToPlugin, "One model response, streamed back as provider/delta notifications; the result ends the stream.",
			protocol.ProviderStreamParams{}, protocol.ProviderStreamResult{}},
		{protocol.MethodHookDecide, hostToPlugin, "Ask a hook to decide at a decision point.",
			protocol.HookDecideParams{}, protocol.HookDecideResult{}},
		{protocol.MethodServiceCall, bothWays, "Call a service method. Key bingo.host is the host's own service (see hostService).",
			protocol.ServiceCallParams{}, protocol.ServiceCallResult{}},
	}
}

// notifications is the spec's notification table, in its order.
func notifications() []method {
	return []method{
		{protocol.NotifyToolProgress, pluginToHost, "The call's live output line.", protocol.ToolProgress{}, nil},
		{protocol.NotifyToolCancel, hostToPlugin, "The turn was interrupted. The host still waits for the call's answer until its deadline.", protocol.ToolCancel{}, nil},
		{protocol.NotifyProviderDelta, pluginToHost, "One chunk of a streamed response.", protocol.ProviderDelta{}, nil},
		{protocol.NotifyProviderCancel, hostToPlugin, "Stop streaming.", protocol.ProviderCancel{}, nil},
		{protocol.NotifyHookObserve, hostToPlugin, "An observation point; nothing waits on it.", protocol.HookObserve{}, nil},
		{protocol.NotifyPluginDeclare, pluginToHost, "What the plugin offers changed: its whole declaration again, held to the handshake's rules; what the host keeps replaces what the plugin contributed.", protocol.InitializeResult{}, nil},
	}
}

// hostMethods are the doors of the reserved service bingo.host. result nil
// means the answer carries nothing the plugin should read.
func hostMethods() []method {
	return []method{
		{protocol.HostAsk, pluginToHost, "Put a question to the person, on a callId the plugin is running now. A call that has ended, or is not the plugin's, is refused.",
			protocol.AskParams{}, protocol.AskResult{}},
		{protocol.HostNotice, pluginToHost, "Say one line under the plugin's own name, at any time.",
			protocol.NoticeParams{}, nil},
	}
}

// union describes one tagged union of sdk: which of the type's fields each
// value of its tag uses. Fields in common are allowed with every kind.
type union struct {
	def    string
	tag    string
	common []string
	kinds  []unionKind
}

type unionKind struct {
	value    string
	fields   []string
	required []string
}

// unions places every field of sdk's tagged unions, following the comments
// on their kind constants. Generate checks it against the reflected types.
func unions() []union {
	return []union{
		{def: "View", tag: "kind", common: []string{"title"}, kinds: []unionKind{
			{value: "text", fields: []string{"text"}},
			{value: "table", fields: []string{"columns", "rows"}},
			{value: "list", fields: []string{"items"}},
			{value: "keyValue", fields: []string{"pairs"}},
			{value: "stack", fields: []string{"views"}},
		}},
		{def: "CommandOutcome", tag: "kind", kinds: []unionKind{
			{value: "view", fields: []string{"view"}, required: []string{"view"}},
			{value: "text", fields: []string{"text"}},
			{value: "prompt", fields: []string{"prompt"}},
			{value: "error", fields: []string{"message"}},
			{value: "none"},
		}},
		{def: "StreamEvent", tag: "kind", kinds: []unionKind{
			{value: "text", fields: []string{"text"}},
			{value: "toolCall", fields: []string{"toolCall"}, required: []string{"toolCall"}},
		}},
	}
}

// Generate returns the bytes of schema/plugin.json: deterministic, indented
// by two spaces, ending in a newline. It reads the doc comments of packages
// sdk and protocol from the module's source (see ModuleRoot), so it fails
// when run outside the source tree.
func Generate() ([]byte, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	comments, err := readComments(root, "sdk", "protocol")
	if err != nil {
		return nil, err
	}
	g := newGenerator(comments)

	reqs, notes, host := requests(), notifications(), hostMethods()
	methodTable := object{}
	var branches []*jsonschema.Schema
	var results []*jsonschema.Schema
	for _, m := range reqs {
		params, result := g.ref(m.params), g.ref(m.result)
		methodTable = append(methodTable, member{m.name, object{
			{"direction", m.direction},
			{"description", m.about},
			{"params", params},
			{"result", result},
		}})
		branches = append(branches, g.messageBranch("request", m, params))
		if !slices.ContainsFunc(results, func(s *jsonschema.Schema) bool { return s.Ref == result.Ref }) {
			results = append(results, result)
		}
	}
	noteTable := object{}
	for _, m := range notes {
		params := g.ref(m.params)
		noteTable = append(noteTable, member{m.name, object{
			{"direction", m.direction},
			{"description", m.about},
			{"params", params},
		}})
		branches = append(branches, g.messageBranch("notification", m, params))
	}
	hostTable := object{}
	var hostCalls []*jsonschema.Schema
	for _, m := range host {
		params := g.ref(m.params)
		entry := object{{"direction", m.direction}, {"description", m.about}, {"params", params}}
		if m.result != nil {
			entry = append(entry, member{"result", g.ref(m.result)})
		} else {
			entry = append(entry, member{"result", &jsonschema.Schema{Description: "Nothing to read: the answer only says the notice was taken."}})
		}
		hostTable = append(hostTable, member{m.name, entry})
		hostCalls = append(hostCalls, &jsonschema.Schema{
			Title:      protocol.HostServiceKey + " " + m.name,
			Properties: props("key", &jsonschema.Schema{Const: protocol.HostServiceKey}, "method", &jsonschema.Schema{Const: m.name}, "params", params),
			Required:   []string{"key", "method", "params"},
		})
	}
	branches = append(branches, &jsonschema.Schema{
		Title:      "response",
		AllOf:      []*jsonschema.Schema{defRef("JSONRPCResponse")},
		Properties: props("result", &jsonschema.Schema{Description: "The result of one of the methods; which one, the request with the same id says.", AnyOf: results}),
	})

	payloads := g.hookPayloads()
	if err := g.finish(); err != nil {
		return nil, err
	}
	if err := payloads.apply(g.defs); err != nil {
		return nil, err
	}
	for name, s := range envelopeDefs() {
		g.defs[name] = s
	}
	g.defs["HostServiceCall"] = &jsonschema.Schema{
		Description: "The params of a service/call addressed to the reserved key " + protocol.HostServiceKey + ": one of the host's own doors, and nothing else.",
		OneOf:       hostCalls,
	}

	doc := object{
		{"$schema", jsonschema.Version},
		{"$id", ID},
		{"title", "bingo plugin wire protocol"},
		{"description", fmt.Sprintf("Generated by `go run ./schema/gen` from the Go types of %s (packages protocol and sdk); do not edit. "+
			"The plugin wire of protocol version %d: JSON-RPC 2.0, one message per line, UTF-8, on the plugin's stdin and stdout. "+
			"The root schema validates one line: a request or a notification of a method listed here, or a response. "+
			"methods, notifications and hostService map every name to its direction and to the $defs of its params and result.",
			modulePath, protocol.Version)},
		{"protocol", protocol.Version},
		{"oneOf", branches},
		{"methods", methodTable},
		{"notifications", noteTable},
		{"hostService", object{
			{"key", protocol.HostServiceKey},
			{"description", "The host's own doors, reached by a plugin→host service/call with key " + protocol.HostServiceKey + "; params and result here are the service/call's inner params and result."},
			{"methods", hostTable},
		}},
		{"$defs", g.defs},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: encoding the document: %w", err)
	}
	return append(unescapeHTML(b), '\n'), nil
}

// generator reflects Go types into one shared set of definitions.
type generator struct {
	r     *jsonschema.Reflector
	defs  jsonschema.Definitions
	types map[string]reflect.Type // definition name → the Go type it came from
	errs  []error
}

func newGenerator(comments map[string]string) *generator {
	g := &generator{defs: jsonschema.Definitions{}, types: map[string]reflect.Type{}}
	g.r = &jsonschema.Reflector{
		Anonymous: true, // the document has one $id, not one per type
		Namer:     g.name,
		LookupComment: func(t reflect.Type, field string) string {
			key := t.PkgPath() + "." + t.Name()
			if field != "" {
				key += "." + field
			}
			return comments[key]
		},
	}
	return g
}

// name keeps the Go name as the definition's name, and records which type
// owns it: two packages' types of one name would otherwise share a
// definition without a word.
func (g *generator) name(t reflect.Type) string {
	n := t.Name()
	if n == "" {
		return ""
	}
	if prev, ok := g.types[n]; ok && prev != t {
		g.errs = append(g.errs, fmt.Errorf("schema: %s and %s would share the definition %q", prev, t, n))
	}
	g.types[n] = t
	return n
}

// ref reflects v's type into the shared definitions and returns a $ref to it.
func (g *generator) ref(v any) *jsonschema.Schema {
	s := g.r.Reflect(v)
	for name, def := range s.Definitions {
		if prev, ok := g.defs[name]; ok {
			a, _ := json.Marshal(prev)
			b, _ := json.Marshal(def)
			if !bytes.Equal(a, b) {
				g.errs = append(g.errs, fmt.Errorf("schema: definition %q reflects differently from %T", name, v))
			}
			continue
		}
		g.defs[name] = def
	}
	if s.Ref == "" {
		g.errs = append(g.errs, fmt.Errorf("schema: %T is not a named struct: it has no definition to refer to", v))
	}
	return &jsonschema.Schema{Ref: s.Ref}
}

// messageBranch is the root oneOf's branch for one method's request or
// notification line.
func (g *generator) messageBranch(kind string, m method, params *jsonschema.Schema) *jsonschema.Schema {
	envelope := "JSONRPCRequest"
	if kind == "notification" {
		envelope = "JSONRPCNotification"
	}
	b := &jsonschema.Schema{
		Title:      m.name + " " + kind,
		AllOf:      []*jsonschema.Schema{defRef(envelope)},
		Properties: props("method", &jsonschema.Schema{Const: m.name}, "params", params),
		Required:   []string{"method", "params"},
	}
	if m.name == protocol.MethodServiceCall {
		b.AllOf = append(b.AllOf, &jsonschema.Schema{
			If: &jsonschema.Schema{
				Properties: props("params", &jsonschema.Schema{
					Properties: props("key", &jsonschema.Schema{Const: protocol.HostServiceKey}),
					Required:   []string{"key"},
				}),
				Required: []string{"params"},
			},
			Then: &jsonschema.Schema{Properties: props("params", defRef("HostServiceCall"))},
		})
	}
	return b
}

// finish reports what went wrong while reflecting, then adds what reflection
// cannot see: nullable fields and the tagged unions.
func (g *generator) finish() error {
	if len(g.errs) > 0 {
		return errors.Join(g.errs...)
	}
	names := make([]string, 0, len(g.defs))
	for name := range g.defs {
		names = append(names, name)
	}
	slices.Sort(names) // errors in a stable order
	var errs []error
	for _, name := range names {
		if err := allowNull(g.defs[name], g.types[name]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, u := range unions() {
		if err := u.apply(g.defs[u.def]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, hookPoints(g.defs["HookDecl"]))...)
}

// hookPoints states on HookDecl the points a hook may declare: the host's
// own lists (sdk.DecisionPoints(), sdk.ObservationPoints()), which it fires
// and checks declarations against, and which no struct tag can name.
func hookPoints(def *jsonschema.Schema) error {
	for _, l := range []struct {
		key    string
		points []sdk.HookPoint
	}{{"decide", sdk.DecisionPoints()}, {"observe", sdk.ObservationPoints()}} {
		var p *jsonschema.Schema
		if def != nil && def.Properties != nil {
			p, _ = def.Properties.Get(l.key)
		}
		if p == nil || p.Items == nil {
			return fmt.Errorf("schema: HookDecl has no list %q to state the hook points on", l.key)
		}
		for _, pt := range l.points {
			p.Items.Enum = append(p.Items.Enum, pt.String())
		}
	}
	return nil
}

// hookPayloadRefs is, per hook point, the $ref of its payload's definition.
type hookPayloadRefs map[sdk.HookPoint]*jsonschema.Schema

// hookPayloads reflects the payload type of every point the host fires
// (sdk.HookPayloads) into the shared definitions.
func (g *generator) hookPayloads() hookPayloadRefs {
	refs := hookPayloadRefs{}
	for at, v := range sdk.HookPayloads() {
		refs[at] = g.ref(v)
	}
	return refs
}

// apply states on HookDecideParams (the decision points) and HookObserve
// (the observation points) what payload is at each point: site and point
// must name one of the points, and an if/then per point refers payload to
// the definition of its type. payload itself stays any JSON, as the Go
// field is; the constraint is the params' own.
func (refs hookPayloadRefs) apply(defs jsonschema.Definitions) error {
	var errs []error
	seen := map[sdk.HookPoint]bool{}
	for _, l := range []struct {
		def    string
		points []sdk.HookPoint
	}{{"HookDecideParams", sdk.DecisionPoints()}, {"HookObserve", sdk.ObservationPoints()}} {
		def := defs[l.def]
		if def == nil || def.Properties == nil {
			errs = append(errs, fmt.Errorf("schema: no definition %s to state the hook payloads on", l.def))
			continue
		}
		var pairs []*jsonschema.Schema
		for _, at := range l.points {
			seen[at] = true
			ref, ok := refs[at]
			if !ok {
				errs = append(errs, fmt.Errorf("schema: hook point %s has no payload type in sdk.HookPayloads", at))
				continue
			}
			where := &jsonschema.Schema{
				Properties: props("site", &jsonschema.Schema{Const: at.Site}, "point", &jsonschema.Schema{Const: at.Point}),
				Required:   []string{"site", "point"},
			}
			pairs = append(pairs, &jsonschema.Schema{Title: at.String(), Properties: where.Properties, Required: where.Required})
			def.AllOf = append(def.AllOf, &jsonschema.Schema{
				If:   where,
				Then: &jsonschema.Schema{Properties: props("payload", &jsonschema.Schema{Ref: ref.Ref})},
			})
		}
		def.AnyOf = pairs
		if p, ok := def.Properties.Get("payload"); ok {
			p.Description = "What happened at the point; its type depends on site and point (see allOf)."
		}
	}
	for at := range refs {
		if !seen[at] {
			errs = append(errs, fmt.Errorf("schema: sdk.HookPayloads names %s, which is neither a decision nor an observation point", at))
		}
	}
	return errors.Join(errs...)
}

// allowNull lets a field accept null where its Go zero value encodes as null
// and is not left out (no omitempty): encoding/json writes a nil slice, map,
// pointer or json.RawMessage as null, so a Go peer sends it.
func allowNull(def *jsonschema.Schema, t reflect.Type) error {
	if t == nil || t.Kind() != reflect.Struct || def == nil || def.Properties == nil {
		return nil
	}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			return fmt.Errorf("schema: %s.%s is embedded; Generate does not place embedded fields", t, f.Name)
		}
		tag := strings.Split(f.Tag.Get("json"), ",")
		name := tag[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if slices.Contains(tag[1:], "omitempty") || slices.Contains(tag[1:], "omitzero") {
			continue
		}
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		default:
			continue
		}
		p, ok := def.Properties.Get(name)
		if !ok {
			return fmt.Errorf("schema: %s.%s: no property %q", t, f.Name, name)
		}
		makeNullable(p)
	}
	return nil
}

// makeNullable widens s, in place, to also accept null.
func makeNullable(s *jsonschema.Schema) {
	switch {
	case s.Type != "":
		if s.Extras == nil {
			s.Extras = map[string]any{}
		}
		s.Extras["type"] = []string{s.Type, "null"}
		s.Type = ""
	case s.Ref != "":
		s.AnyOf = []*jsonschema.Schema{{Ref: s.Ref}, {Type: "null"}}
		s.Ref = ""
	default:
		// No type and no reference: it accepts any JSON, null included.
	}
}

// apply adds to def one if/then per kind: the kind's own fields and the
// common ones are allowed, every other kind's fields are forbidden, and the
// kind's required payload is required. It fails when the table and the
// reflected type disagree about the kinds or the fields.
func (u union) apply(def *jsonschema.Schema) error {
	if def == nil || def.Properties == nil {
		return fmt.Errorf("schema: tagged union %s: no such definition", u.def)
	}
	tag, ok := def.Properties.Get(u.tag)
	if !ok {
		return fmt.Errorf("schema: tagged union %s: no tag field %q", u.def, u.tag)
	}
	var listed []any
	owner := map[string]string{}
	for _, k := range u.kinds {
		listed = append(listed, k.value)
		for _, f := range k.fields {
			if _, ok := def.Properties.Get(f); !ok {
				return fmt.Errorf("schema: tagged union %s: kind %q names field %q, which %s does not have", u.def, k.value, f, u.def)
			}
			owner[f] = k.value
		}
	}
	if !slices.Equal(tag.Enum, listed) {
		return fmt.Errorf("schema: tagged union %s: the Go type's kinds are %v, the union table's %v; update unions() in schema.go", u.def, tag.Enum, listed)
	}
	for p := def.Properties.Oldest(); p != nil; p = p.Next() {
		if p.Key != u.tag && !slices.Contains(u.common, p.Key) && owner[p.Key] == "" {
			return fmt.Errorf("schema: tagged union %s: field %q belongs to no kind; update unions() in schema.go", u.def, p.Key)
		}
	}
	for _, k := range u.kinds {
		forbidden := jsonschema.NewProperties()
		for p := def.Properties.Oldest(); p != nil; p = p.Next() {
			if o := owner[p.Key]; o != "" && o != k.value {
				forbidden.Set(p.Key, jsonschema.FalseSchema)
			}
		}
		then := &jsonschema.Schema{Required: k.required}
		if forbidden.Len() > 0 {
			then.Properties = forbidden
		}
		def.AllOf = append(def.AllOf, &jsonschema.Schema{
			If: &jsonschema.Schema{
				Properties: props(u.tag, &jsonschema.Schema{Const: k.value}),
				Required:   []string{u.tag},
			},
			Then: then,
		})
	}
	return nil
}

// envelopeDefs is the JSON-RPC 2.0 envelope. It is JSON-RPC's, not a type of
// this module, so it is written here rather than reflected.
func envelopeDefs() jsonschema.Definitions {
	version := &jsonschema.Schema{Const: "2.0"}
	id := func(null bool) *jsonschema.Schema {
		types := []string{"integer", "string"}
		if null {
			types = append(types, "null")
		}
		return &jsonschema.Schema{Description: "Chosen by the sender of the request; the response carries it back.", Extras: map[string]any{"type": types}}
	}
	return jsonschema.Definitions{
		"JSONRPCRequest": {
			Description: "A JSON-RPC 2.0 request: it is answered by a response with the same id.",
			Type:        "object",
			Properties: props(
				"jsonrpc", version,
				"id", id(false),
				"method", &jsonschema.Schema{Type: "string"},
				"params", &jsonschema.Schema{Description: "The method's params (see methods)."},
			),
			Required:             []string{"jsonrpc", "id", "method"},
			AdditionalProperties: jsonschema.FalseSchema,
		},
		"JSONRPCNotification": {
			Description: "A JSON-RPC 2.0 notification: no id, and nothing answers it.",
			Type:        "object",
			Properties: props(
				"jsonrpc", version,
				"method", &jsonschema.Schema{Type: "string"},
				"params", &jsonschema.Schema{Description: "The notification's params (see notifications)."},
			),
			Required:             []string{"jsonrpc", "method"},
			AdditionalProperties: jsonschema.FalseSchema,
		},
		"JSONRPCResponse": {
			Description: "A JSON-RPC 2.0 response: a result or an error, never both.",
			Type:        "object",
			Properties: props(
				"jsonrpc", version,
				"id", id(true),
				"result", &jsonschema.Schema{Description: "The method's result (see methods)."},
				"error", defRef("JSONRPCError"),
			),
			Required:             []string{"jsonrpc", "id"},
			OneOf:                []*jsonschema.Schema{{Required: []string{"result"}}, {Required: []string{"error"}}},
			AdditionalProperties: jsonschema.FalseSchema,
		},
		"JSONRPCError": {
			Description: "A JSON-RPC 2.0 error. -32601 answers a method the receiver does not know.",
			Type:        "object",
			Properties: props(
				"code", &jsonschema.Schema{Type: "integer"},
				"message", &jsonschema.Schema{Type: "string"},
				"data", &jsonschema.Schema{Description: "Anything more the sender wants to say."},
			),
			Required:             []string{"code", "message"},
			AdditionalProperties: jsonschema.FalseSchema,
		},
	}
}

func defRef(name string) *jsonschema.Schema { return &jsonschema.Schema{Ref: "#/$defs/" + name} }

// props builds ordered properties from name, schema pairs.
func props(kv ...any) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i].(string), kv[i+1].(*jsonschema.Schema))
	}
	return p
}

// object is a JSON object that keeps its members' order, so the document
// reads in the spec's order rather than alphabetically.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// unescapeHTML undoes encoding/json's HTML escaping (\u003c, \u003e,
// \u0026) in encoded JSON, so descriptions read "plugins.<name>" in the
// file. It walks escapes one at a time, so an escaped backslash followed by
// "u003c" is left alone.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, copied whole
		i++
	}
	return out
}
