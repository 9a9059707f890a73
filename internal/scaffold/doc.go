// Package scaffold writes a new bingo plugin: `bingo plugins new NAME
// --lang python|node|go`. The plugin it writes works as written (one tool,
// greet; one command, /NAME, with completion), passes `bingo plugins check`
// out of the box, and comes with a README for its author. The templates are
// embedded (templates/<lang>/), each file run through text/template with
// the plugin's name.
package scaffold
