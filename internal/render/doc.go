// Package render owns how a sdk.View reaches a person: drawn on a terminal
// (View), folded to plain text for --print and text-only channels (Fold),
// and a tool call's live output line (Progress, ClearProgress).
//
// The terminal rendering draws tables with box-drawing borders and a bold
// header, lists with "•" bullets, key-value pairs with aligned dim keys,
// titles in bold, and the views of a stack one under another with a blank
// line between. ANSI escapes are written only when Options.Color is set.
// A table is fitted to Options.Width: its widest columns are narrowed
// first and cells that no longer fit end in "…". Other views are not cut,
// because the terminal wraps their lines without breaking anything. Widths
// are counted in terminal cells: East Asian wide characters take two,
// combining marks none. Listing lays out bingo's own plain listings
// (bingo plugins) the same way but for a width it never exceeds: a long
// last column wraps, a row's note goes under it.
//
// Everything in a View may come from a plugin, and nothing a process says
// is believed: control characters (ESC, CR, backspace, C1 codes…) and
// bidi controls are removed from its text before it is drawn or folded, so
// a plugin cannot move the cursor, rewrite the line, retitle the window,
// write to the clipboard or reorder what the person reads through their
// terminal. Tabs and newlines survive where
// they can be shown (text, list items, values); inside table cells and
// titles they become spaces so the layout holds. Clean and Line apply the
// same cleaning to text that is not a View (tool output, streamed model
// text, notices, questions), keeping or folding tabs and newlines. Block
// and Brief also cap a plugin's text shown beside one of bingo's prompts
// and squeeze its blank space, so it cannot push the prompt's own words
// off the screen. Whole is for the opposite case, text the person must
// see all of before deciding (a command line a repository would run):
// squeezed and wrapped, what would not show marked by its code point,
// nothing cut. Escape is for a log: what Clean would remove is written
// as its escape instead (\x1b, \u202e), so the log shows what was sent.
// URL is a URL as it may be shown or logged: its userinfo and
// secret-looking query values hidden, a ${VAR} left as written.
//
//	render.View(os.Stdout, out.Display, render.Options{Color: isTerminal})
//	render.Fold(os.Stdout, out.Display) // --print
package render
