package host

import (
	"fmt"

	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// UntrustedProject returns the project that dir lies in when the person
// has not trusted it as it is now, or "", and why, in words that follow
// the project's path: "which you have not trusted", or, in a project the
// person trusted, what lapsed since ("whose plugin x changed since you
// trusted it (...)"). A directory the person names on the command line
// (--plugin-dir, plugins check) is run as theirs, with their rights and
// grants; inside a repository they have not trusted it holds the
// repository's code, so running it must be the person's explicit word for
// this run (--trust, or yes at the terminal). The home directory, which
// holds ~/.bingo, is the person's own and no project. A project counts as
// trusted while the person's record of it stands and every one of its
// plugins is as recorded: what the record pins has not changed, so
// neither has the person's judgement of the repository.
func UntrustedProject(home, cwd, dir string, environ []string) (root, why string) {
	root = manifest.Project(home, dir)
	if root == "" {
		return "", ""
	}
	rec, ok, err := trust.NewStore(home).Get(root)
	if err != nil || !ok || rec.Declined {
		return root, "which you have not trusted"
	}
	found, _ := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(root)})
	now, problems := snapshot(scopeOf(root, cwd, userEnvRule(home, environ)), found, trust.NewSums())
	for _, m := range found {
		if err := problems[m.Name]; err != nil {
			return root, fmt.Sprintf("whose plugin %s cannot be checked (%v)", m.Name, err)
		}
		if good, lapse := rec.Check(now[m.Name]); !good {
			return root, "whose " + lapsed(lapse)
		}
	}
	return "", ""
}

// lapsed says what changed of one plugin since the person trusted its
// project, after "whose".
func lapsed(l trust.Lapse) string {
	if l.New {
		return fmt.Sprintf("plugin %s is new since you trusted it", l.Plugin)
	}
	return fmt.Sprintf("plugin %s changed since you trusted it (%s)", l.Plugin, listSome(l.Changed))
}
