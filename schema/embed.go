package schema

import _ "embed"

// Document is the committed schema/plugin.json, for programs that validate
// against it (bingo plugins check) without reading it from a checkout.
// TestGeneratedSchemaIsCurrent keeps it equal to what Generate builds.
//
//go:embed plugin.json
var Document []byte
