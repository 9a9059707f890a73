// Package schema owns the generated JSON Schemas (draft 2020-12):
// schema/plugin.json, the plugin wire, the document a plugin author who
// does not write Go works against; and schema/settings.json, a settings
// file, which an editor validates and completes settings.json with
// (GenerateSettings says how it is made). `go run ./schema/gen` (make
// schema) writes both, and `go run ./schema/gen -check` (make check) fails
// when either is not current.
//
// The rest of this comment is about schema/plugin.json.
//
// The document is generated, never written by hand. Its single source of
// truth is the Go types of package protocol (the envelopes) and package sdk
// (the values inside them), reflected with github.com/invopop/jsonschema;
// their doc comments become the descriptions. Generate builds it; `go run
// ./schema/gen` (or `go generate ./schema`) rewrites the committed file, and
// TestGeneratedSchemaIsCurrent fails when the two differ.
//
// The document's shape:
//
//   - The root schema validates one wire line: a oneOf over a request or a
//     notification of every method (method as a const, params as a $ref)
//     and a response. A method this protocol version does not list is not
//     valid; a plugin answers it with error -32601.
//   - "methods", "notifications" and "hostService" are tables (annotation
//     keywords, not assertions) mapping every name to its direction and the
//     $defs of its params and result, so a generator or a person can find
//     the shapes of one method without reading the oneOf.
//   - "$defs" holds every type by its Go name, shared by all of the above,
//     plus the JSON-RPC 2.0 envelope (JSONRPCRequest, JSONRPCNotification,
//     JSONRPCResponse, JSONRPCError).
//
// Reflection alone does not say everything the Go types mean, so Generate
// adds three things after reflecting, and checks itself while doing so:
//
//   - A field whose Go zero value encodes as null and which is not
//     omitempty (a nil slice, map, pointer or json.RawMessage) also accepts
//     null, because a Go peer sends exactly that. initialize.config is the
//     case the spec names.
//   - View, CommandOutcome and StreamEvent are tagged unions on "kind": for
//     each kind an if/then forbids the fields that belong to the other kinds
//     (a Go peer would silently ignore them) and requires the payload where
//     a kind is meaningless without it (a "view" outcome needs its view).
//     Generate fails if sdk grows a kind or a field the union table
//     (protocol.Unions, which Check holds values to as well) does not
//     place, so the table cannot drift silently.
//   - A service/call addressed to the reserved key bingo.host must be one of
//     the host's two doors, ask or notice, with their params.
//
// Use:
//
//	b, err := schema.Generate() // the bytes of schema/plugin.json
package schema
