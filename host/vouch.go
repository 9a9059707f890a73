package host

import (
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// UntrustedProject returns the project that dir lies in when the person
// has not trusted it as it is now, or "". A directory the person names on
// the command line (--plugin-dir, plugins check) is run as theirs, with
// their rights and grants; inside a repository they have not trusted it
// holds the repository's code, so running it must be the person's
// explicit word for this run (--trust, or yes at the terminal). The home
// directory, which holds ~/.bingo, is the person's own and no project.
// A project counts as trusted while the person's record of it stands and
// every one of its plugins is as recorded: what the record pins has not
// changed, so neither has the person's judgement of the repository.
func UntrustedProject(home, cwd, dir string, environ []string) string {
	root := manifest.ProjectRoot(dir)
	if root == "" || (home != "" && realPath(root) == realPath(home)) {
		return ""
	}
	rec, ok, err := trust.NewStore(home).Get(root)
	if err != nil || !ok || rec.Declined {
		return root
	}
	found, _ := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(root)})
	now, problems := snapshot(scopeOf(root, cwd, environ), found, trust.NewSums())
	if len(problems) > 0 || !sameAsRecord(rec, now, found) {
		return root
	}
	return ""
}
