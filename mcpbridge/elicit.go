package mcpbridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// An elicitation is a form the server asks the person to fill in, put to
// them through the host's ask on the tool call it is part of. The rules
// (docs/plugins.md states them):
//   - A form of one field with no default is one question: the message
//     and the field. Any other form is first shown whole (the message and
//     every field), and "y" fills it in, one question a field, in the
//     order of their names. An empty answer to the first question
//     declines; to a later one it takes the field's default, leaves an
//     optional field out, and is asked again for a required one.
//   - An answer that is not valid for its field (a wrong type, not one of
//     the choices, outside the field's bounds) is asked again, saying what
//     was wrong, up to maxAsks asks of one question; then the request is
//     declined, the log saying why.
//   - No one to ask (--print, no terminal, Ctrl-C) is cancel: the person
//     made no choice. Why is the log's, never the server's.
//   - A request that is part of none of the server's running calls is
//     declined (see askingCall).

// What of an elicitation's text reaches the person (docs/plugins.md): its
// message, in lines and characters, and its fields' names and
// descriptions, on one line; what was wrong with an answer, on a line.
// With bingo's own words they stay within what the terminal shows of any
// question (internal/cli).
const (
	elicitLines      = 9
	elicitChars      = 500
	elicitFieldChars = 400
	elicitWhyChars   = 200
)

// maxAsks is how many times one question of a form is asked before an
// elicitation whose answers are all invalid is declined: enough for a
// typo and its correction, and a server whose form cannot be filled in
// does not hold the person in a loop.
const maxAsks = 3

// maxFields is the most fields a form bingo puts to the person may have:
// each is one question, and a server must not be able to queue thousands.
const maxFields = 32

// elicit puts the server's question to the person, on the tool call it is
// part of. A request no call of this server can be named for is declined,
// as one the person cannot be asked about; so is a url-mode request,
// which bingo does not open.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	id, err := s.askingCall(ctx)
	if err == nil && p.Mode == "url" {
		err = errors.New("it asks to open a URL, which bingo does not do for an MCP server")
	}
	var f form
	if err == nil {
		f, err = readForm(p.RequestedSchema)
	}
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: elicitation answered decline: %v\n", err)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	ask := func(question string) (string, error) { return s.ask(ctx, id, question) }
	res, err := f.fill(p.Message, ask)
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "mcpbridge: elicitation answered %s: %v\n", res.Action, err)
	}
	return res, nil
}

// ask puts question to the person on call id, and returns their answer,
// trimmed.
func (s *server) ask(ctx context.Context, id, question string) (string, error) {
	raw, _ := json.Marshal(protocol.AskParams{Call: id, Question: question})
	var res protocol.ServiceCallResult
	if err := s.rpc.Call(ctx, protocol.MethodServiceCall, protocol.ServiceCallParams{
		Key: protocol.HostServiceKey, Method: protocol.HostAsk, Params: raw}, &res); err != nil {
		return "", err
	}
	var ans protocol.AskResult
	if err := json.Unmarshal(res.Result, &ans); err != nil {
		return "", fmt.Errorf("the host's answer: %v", err)
	}
	return strings.TrimSpace(ans.Answer), nil
}

// askingCall is the tool call of this server an elicitation or a
// sampling request is part of.
// From protocol 2026-07-28 on a server asks only in a call's result, and
// the sdk's ctx names the call. Before, a server sends its request on its
// own, and the wire does not say which call it is for: while exactly one
// of its calls runs it can only be for that one; with none running it is
// outside any call, and with several it cannot be told which (asking on
// the oldest, as bingo once did, put one call's question under another).
func (s *server) askingCall(ctx context.Context) (string, error) {
	id, _ := ctx.Value(callKey{}).(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != "" {
		if !slices.ContainsFunc(s.calls, func(c *call) bool { return c.id == id }) {
			return "", fmt.Errorf("its tool call %s has ended", id)
		}
		return id, nil
	}
	var version string
	if s.cs != nil {
		version = s.cs.InitializeResult().ProtocolVersion
	}
	switch {
	case version >= protocolMRTR:
		return "", fmt.Errorf("it was sent outside any of the server's tool calls (protocol %s asks only in a call's result)", version)
	case len(s.calls) == 0:
		return "", errors.New("it was sent while none of the server's tool calls was running")
	case len(s.calls) > 1:
		return "", fmt.Errorf("it was sent while %d of the server's tool calls were running, and protocol %s does not say which it is for", len(s.calls), version)
	}
	return s.calls[0].id, nil
}

// protocolMRTR is the first MCP version in which a server's requests to
// the client are part of a call's result (multi round-trip requests).
const protocolMRTR = "2026-07-28"

// form is an elicitation's requested schema: a flat object whose fields
// are each a primitive value or a choice.
type form struct {
	fields []field
}

// field is one property of a form.
type field struct {
	name        string
	title       string
	description string
	typ         string // string, number, integer, boolean or array (several choices)
	format      string
	choices     []choice
	def         any // the default; nil for none
	required    bool
	schema      *jsonschema.Resolved // the property's own schema, which its value must satisfy
}

// choice is one value a choice field can take, and its title if it has
// one; the person may answer either.
type choice struct{ value, title string }

// readForm reads the requested schema (which the sdk has checked is a
// flat object of primitives and choices).
func readForm(schema any) (form, error) {
	var f form
	if schema == nil {
		return f, nil
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(rawJSON(schema), &sch); err != nil {
		return f, fmt.Errorf("its requested schema: %v", err)
	}
	if len(sch.Properties) > maxFields {
		return f, fmt.Errorf("its form has %d fields; bingo asks at most %d", len(sch.Properties), maxFields)
	}
	for name, p := range sch.Properties {
		if p == nil {
			continue
		}
		rs, err := p.Resolve(nil)
		if err != nil {
			return f, fmt.Errorf("its field %s: %v", name, err)
		}
		fd := field{name: name, title: p.Title, description: p.Description, typ: p.Type, format: p.Format,
			required: slices.Contains(sch.Required, name), schema: rs}
		if fd.typ == "" {
			fd.typ = "string"
		}
		if len(p.Default) > 0 {
			if err := json.Unmarshal(p.Default, &fd.def); err != nil {
				return f, fmt.Errorf("its field %s's default: %v", name, err)
			}
		}
		fd.choices = choicesOf(p)
		if fd.typ == "array" && p.Items != nil {
			fd.choices = choicesOf(p.Items)
		}
		f.fields = append(f.fields, fd)
	}
	sort.Slice(f.fields, func(i, j int) bool { return f.fields[i].name < f.fields[j].name })
	return f, nil
}

// choicesOf is what a string schema lets be chosen: its enum (titled by a
// legacy enumNames), or its oneOf or anyOf of titled constants.
func choicesOf(p *jsonschema.Schema) []choice {
	var cs []choice
	names, _ := p.Extra["enumNames"].([]any)
	for i, v := range p.Enum {
		c := choice{value: fmt.Sprint(v)}
		if i < len(names) {
			c.title = fmt.Sprint(names[i])
		}
		cs = append(cs, c)
	}
	for _, e := range append(slices.Clone(p.OneOf), p.AnyOf...) {
		if e != nil && e.Const != nil {
			cs = append(cs, choice{value: fmt.Sprint(*e.Const), title: e.Title})
		}
	}
	return cs
}

// describe is the field as the person is shown it: its name, what it
// takes, whether it is required, its default, and its description.
func (f field) describe() string {
	var kind string
	switch {
	case len(f.choices) > 0:
		var cs []string
		for _, c := range f.choices {
			s := c.value
			if c.title != "" && c.title != c.value {
				s += " " + strconv.Quote(c.title)
			}
			cs = append(cs, s)
		}
		kind = "one of " + strings.Join(cs, ", ")
		if f.typ == "array" {
			kind = "any of " + strings.Join(cs, ", ") + ", separated by commas"
		}
	case f.typ == "boolean":
		kind = "yes or no"
	case f.format != "":
		kind = f.typ + ", " + f.format
	default:
		kind = f.typ
	}
	parts := []string{kind}
	if f.required {
		parts = append(parts, "required")
	} else {
		parts = append(parts, "optional")
	}
	if f.def != nil {
		parts = append(parts, "default "+f.show(f.def))
	}
	s := f.name + " (" + strings.Join(parts, "; ") + ")"
	if about := strings.TrimSpace(strings.Join([]string{f.title, f.description}, " ")); about != "" && about != f.name {
		s += ": " + about
	}
	return s
}

// show is a value of the field as the person would answer it.
func (f field) show(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case []any:
		var s []string
		for _, x := range v {
			s = append(s, fmt.Sprint(x))
		}
		return strings.Join(s, ", ")
	}
	return fmt.Sprint(v)
}

// value reads the person's answer as a value of the field, or says why it
// is not one.
func (f field) value(answer string) (any, error) {
	var v any
	switch {
	case f.typ == "array":
		var vs []any
		for w := range strings.SplitSeq(answer, ",") {
			c, err := f.choose(strings.TrimSpace(w))
			if err != nil {
				return nil, err
			}
			vs = append(vs, c)
		}
		v = vs
	case len(f.choices) > 0:
		c, err := f.choose(answer)
		if err != nil {
			return nil, err
		}
		v = c
	case f.typ == "boolean":
		switch strings.ToLower(answer) {
		case "y", "yes", "true":
			v = true
		case "n", "no", "false":
			v = false
		default:
			return nil, fmt.Errorf("%q is not yes or no", answer)
		}
	case f.typ == "integer":
		n, err := strconv.ParseInt(answer, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", answer)
		}
		v = n
	case f.typ == "number":
		n, err := strconv.ParseFloat(answer, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", answer)
		}
		v = n
	default:
		v = answer
	}
	var n float64
	num := true
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		num = false
	}
	if num {
		sch := f.schema.Schema()
		if sch.Minimum != nil && n < *sch.Minimum {
			return nil, fmt.Errorf("%s is less than %s, the least allowed", answer, strconv.FormatFloat(*sch.Minimum, 'g', -1, 64))
		}
		if sch.Maximum != nil && n > *sch.Maximum {
			return nil, fmt.Errorf("%s is more than %s, the most allowed", answer, strconv.FormatFloat(*sch.Maximum, 'g', -1, 64))
		}
	}
	// The rest of the field's schema (lengths, a pattern) is held
	// as the sdk holds the result to it, so that what is accepted here is
	// never refused there.
	if err := f.schema.Validate(v); err != nil {
		// The library's words, less where in the schema it was.
		_, msg, _ := strings.Cut(err.Error(), "validating root: ")
		return nil, fmt.Errorf("%s is not valid: %s", f.show(v), cmp.Or(msg, err.Error()))
	}
	return v, nil
}

// choose is the choice the answer names, by value or title, in any case.
func (f field) choose(answer string) (string, error) {
	for _, c := range f.choices {
		if strings.EqualFold(answer, c.value) || (c.title != "" && strings.EqualFold(answer, c.title)) {
			return c.value, nil
		}
	}
	var cs []string
	for _, c := range f.choices {
		cs = append(cs, c.value)
	}
	return "", fmt.Errorf("%q is not one of %s", answer, strings.Join(cs, ", "))
}

// fill asks the person to fill in the form, message being the server's
// question, and returns the result for the server, and why it is not
// accept when that was not the person's choice, for the log.
func (f form) fill(message string, ask func(string) (string, error)) (*mcp.ElicitResult, error) {
	content, err := f.answers(message, ask)
	var e *ended
	if errors.As(err, &e) {
		return &mcp.ElicitResult{Action: e.action}, e.why
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// ended is a form not filled in: the action the request ends in, and why
// when the person did not choose it.
type ended struct {
	action string
	why    error
}

func (e *ended) Error() string { return e.action }

// declined is the person's own decline, an empty answer.
var declined = &ended{action: "decline"}

// answers asks the person for the form's content.
func (f form) answers(message string, ask func(string) (string, error)) (map[string]any, error) {
	// The server's words are capped here, under what bingo shows of any
	// question, so that what bingo adds (the fields, how to decline) is
	// never what gets cut; a question asked again leaves them out.
	msg := strings.Join(render.Block(message, elicitLines, elicitChars), "\n")
	declines := " — an empty answer declines"
	if len(f.fields) == 1 && f.fields[0].def == nil {
		fd := f.fields[0]
		desc := render.Brief(fd.describe(), elicitFieldChars)
		a, err := asked(msg+" ("+desc+")"+declines, desc+declines, ask, func(a string) error {
			if a == "" {
				return nil
			}
			_, err := fd.value(a)
			return err
		})
		if err != nil || a == "" {
			return nil, cmp.Or[error](err, declined)
		}
		v, _ := fd.value(a)
		return map[string]any{fd.name: v}, nil
	}
	if len(f.fields) == 0 {
		a, err := asked(msg+declines, msg+declines, ask, func(string) error { return nil })
		if err != nil || a == "" {
			return nil, cmp.Or[error](err, declined)
		}
		return nil, nil
	}
	var ds []string
	for _, fd := range f.fields {
		ds = append(ds, fd.describe())
	}
	whole := "Fields: " + render.Brief(strings.Join(ds, "; "), elicitFieldChars) + " — answer y to fill them in" + strings.Replace(declines, " —", ";", 1)
	a, err := asked(msg+"\n"+whole, whole, ask, func(a string) error {
		switch strings.ToLower(a) {
		case "", "y", "yes":
			return nil
		}
		return fmt.Errorf("%q is not y", a)
	})
	if err != nil || a == "" {
		return nil, cmp.Or[error](err, declined)
	}
	content := map[string]any{}
	for _, fd := range f.fields {
		empty := "leaves it out"
		switch {
		case fd.def != nil:
			empty = "takes the default"
		case fd.required:
			empty = "is asked again"
		}
		q := render.Brief(fd.describe(), elicitFieldChars) + " — an empty answer " + empty
		a, err := asked(q, q, ask, func(a string) error {
			if a == "" {
				if fd.required && fd.def == nil {
					return fmt.Errorf("%s is required", fd.name)
				}
				return nil
			}
			_, err := fd.value(a)
			return err
		})
		if err != nil {
			return nil, err
		}
		switch {
		case a != "":
			content[fd.name], _ = fd.value(a)
		case fd.def != nil:
			content[fd.name] = fd.def
		}
	}
	return content, nil
}

// asked asks first, then again until check accepts the answer, saying
// each time what was wrong with the last one, at most maxAsks times in
// all. It returns the accepted answer, or why the request ends (*ended):
// cancel when no one could be asked, decline when every answer was wrong.
func asked(first, again string, ask func(string) (string, error), check func(string) error) (string, error) {
	q := first
	var why error
	for n := 1; n <= maxAsks; n++ {
		a, err := ask(q)
		if err != nil {
			return "", &ended{action: "cancel", why: fmt.Errorf("no one could be asked: %v", err)}
		}
		if why = check(a); why == nil {
			return a, nil
		}
		q = fmt.Sprintf("%s — asked again (%d of %d):\n%s", render.Brief(why.Error(), elicitWhyChars), n+1, maxAsks, again)
	}
	return "", &ended{action: "decline", why: fmt.Errorf("%d answers were not valid, the last: %v", maxAsks, why)}
}
