// Package docs holds bingo's reference in Markdown: plugins.md, for plugin
// authors in any language, settings.md, for the person configuring bingo,
// and cli.md, for the command line. It has no code; tests keep the pages
// true. Every hook point, hook outcome, protocol method, notification and
// bingo.host door the code names must appear in plugins.md, and every
// settings key in settings.md, with its type, unit, default and layers as
// package settings states them; every wire line shown is validated against
// schema/plugin.json, and every hook payload shown against what the host
// sends (this package's test). Every subcommand, flag, exit status and
// environment variable of the command line must appear in cli.md
// (internal/cli's test, where they are defined).
package docs
