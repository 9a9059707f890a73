// Package scaffold writes a new bingo plugin: `bingo plugins new NAME
// --lang python|node|go|wasm`. The plugin it writes works as written (one
// tool, greet; one command, /NAME, with completion), passes `bingo plugins
// check` out of the box (once built, for go and wasm), and comes with a
// README for its author. The templates are embedded: templates/<lang>/ for
// each language's files, templates/README.md shared by all, each run
// through text/template with the plugin's name.
//
// A wasm plugin is Go on pluginkit, so its go.mod requires this module.
// Until that is published, a bingo built from a checkout cannot name a
// version a proxy has: --kit DIR writes a replace directive to the
// checkout instead.
package scaffold
