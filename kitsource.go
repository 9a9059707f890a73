// Package bingo carries, inside the bingo binary, the source of the part of
// this module a Go plugin is built on — pluginkit, sdk and protocol, which
// need nothing but the standard library — so that `bingo plugins new --lang
// wasm` writes a plugin that builds with Go alone: no checkout of bingo, no
// module proxy (internal/scaffold writes it beside the plugin).
package bingo

import "embed"

// KitSource is go.mod and the Go files of sdk, protocol and pluginkit.
//
//go:embed go.mod sdk/*.go protocol/*.go pluginkit/*.go
var KitSource embed.FS
