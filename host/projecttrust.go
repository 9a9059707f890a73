package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/bridge"
	"github.com/bingo/bingo-plugin-rpc/host/agent"
	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/internal/render"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// TrustQuestion is what Config.AskTrust puts to the person: the project
// and what of it would run with the person's rights, its processes and
// remote servers.
type TrustQuestion struct {
	Project string
	Plugins []Runs
}

// Runs is what one project plugin would run, as the person is shown it
// before trusting it (the trust prompt, bingo trust).
type Runs struct {
	Name string
	// Line is its command line as its entry spells it, an argument a
	// shell would not read as one word quoted as a shell quotes it (for a
	// module, entry.wasm and its arguments), or a remote server's URL
	// with its userinfo and secret-looking query values hidden.
	// It is whole, however long: whoever shows it wraps it, never cuts
	// it (render.Whole).
	Line string
	// Vars names, sorted, the variables its entry reads when it starts
	// (manifest.Manifest.Vars), from what the person's environment rule
	// gives it.
	Vars []string
	// Asks is what its manifest asks for beyond the default sandbox
	// (manifest.Permissions), which trusting grants; "" for nothing.
	Asks string
}

// runsOf is what m would run.
func runsOf(m *manifest.Manifest) Runs {
	r := Runs{Name: m.Name, Vars: m.Vars(), Asks: m.Permissions.String()}
	switch m.Entry.Transport() {
	case manifest.TransportHTTP:
		r.Line = render.HideURLSecrets(m.Entry.URL)
		return r
	case manifest.TransportWasm:
		r.Line = shellWord(m.Entry.Wasm)
	default:
		r.Line = shellWord(m.Entry.Command)
	}
	for _, a := range m.Entry.Args {
		r.Line += " " + shellWord(a)
	}
	return r
}

// shellWord is s as one word of a POSIX shell's command line: as it is if
// it holds nothing a shell reads specially, else single-quoted. Where one
// argument ends and the next begins is what the person must see.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-${}") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// projectTrust is what the person's trust record says about this run's
// project. Only the project layer is ever untrusted: the user layer is the
// person's own, and a --plugin-dir is named by the person for this run.
type projectTrust struct {
	root     string
	store    *trust.Store
	settings bool              // the project's settings file applies in full
	plugins  map[string]bool   // project plugin name → trusted
	why      map[string]string // project plugin name → why it is untrusted
}

// trusted reports whether m may act with the person's authority: start as
// an exec plugin, receive the person's grants.
func (t *projectTrust) trusted(m *manifest.Manifest) bool {
	return m.Layer != manifest.LayerProject || t.plugins[m.Name]
}

// untrustedNames returns the project plugins that are not trusted, sorted.
func (t *projectTrust) untrustedNames() []string {
	var names []string
	for name, ok := range t.plugins {
		if !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// howToTrust is the one line of advice every refusal ends with.
func howToTrust(root string) string {
	return fmt.Sprintf("run \"bingo trust --cwd %s\" to trust it", root)
}

// assessTrust reads the person's record for the project and compares it
// with what the project's plugins would run now. A lapse is one notice
// per plugin naming what changed; an unreadable record is one notice and
// means untrusted.
func assessTrust(ctx context.Context, cfg Config, root string, found []*manifest.Manifest, sums *trust.Sums, env envRule) *projectTrust {
	t := &projectTrust{root: root, store: trust.NewStore(cfg.Home), plugins: map[string]bool{}, why: map[string]string{}}
	var project []*manifest.Manifest
	for _, m := range found {
		if m.Layer == manifest.LayerProject {
			project = append(project, m)
		}
	}
	settingsFile := filepath.Join(root, ".bingo", "settings.json")
	if root == "" {
		return t
	}
	rec, ok, err := t.store.Get(root)
	if err != nil {
		cfg.Notify(bridge.Notice{Level: "error", Message: fmt.Sprintf("cannot read your trust record: %v; %s is treated as untrusted", err, root)})
		ok = false
	}
	each := &perPlugin{notify: cfg.Notify}
	defer each.done()
	// What the plugins would run is read only when there is a record to
	// compare it with or an answer to record: a cloned repository never
	// trusted costs no reading of its plugins' directories.
	var now map[string]trust.Plugin
	read := func() {
		var problems map[string]error
		now, problems = snapshot(scopeOf(root, cfg.Cwd, env), project, sums)
		for _, name := range slices.Sorted(maps.Keys(problems)) {
			t.why[name] = "cannot be checked: " + problems[name].Error()
			each.add(bridge.Notice{Plugin: name, Level: "error", Message: "untrusted: " + problems[name].Error()})
		}
	}
	if ok {
		read()
	}
	trustedBefore := ok && !rec.Declined
	for _, m := range project {
		if !trustedBefore {
			t.plugins[m.Name] = false
			if _, problem := t.why[m.Name]; !problem {
				t.why[m.Name] = "this project is not trusted; " + howToTrust(root)
			}
			continue
		}
		p, snapped := now[m.Name]
		if !snapped {
			t.plugins[m.Name] = false
			continue
		}
		good, lapse := rec.Check(p)
		t.plugins[m.Name] = good
		if !good {
			t.why[m.Name] = describeLapse(lapse, root)
			each.add(bridge.Notice{Plugin: m.Name, Level: "warn", Message: "trust lapsed: " + t.why[m.Name]})
		}
	}
	if trustedBefore {
		sr, err := trust.SettingsRecord(settingsFile)
		t.settings = err == nil && rec.SettingsTrusted(sr)
		if !t.settings {
			cfg.Notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("%s changed since you trusted %s, so only its deny and ask rules apply until you trust it again: %s",
				settingsFile, root, howToTrust(root))})
		}
	}
	if declined := ok && rec.Declined && sameAsRecord(rec, now, project); t.hasUntrustedExec(project) {
		notAsked := "" // why the person, though at a terminal, was not asked
		if !declined && cfg.AskTrust != nil {
			if !ok {
				read()
			}
			yes, err := cfg.AskTrust(ctx, t.question(project))
			switch {
			case err == nil:
				t.decide(cfg, project, now, yes)
				if yes {
					return t
				}
			case errors.Is(err, agent.ErrNoOneToAsk):
				notAsked = " (you were not asked: " + err.Error() + ")"
			}
		}
		if trustedBefore {
			// The project is trusted: each plugin that lapsed has had its
			// notice, naming what changed and how to trust it again. One
			// more saying the project is not trusted would be false.
			return t
		}
		cfg.Notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("this repository's plugins %s were not started: %s is not trusted%s; %s",
			listSome(t.untrustedExec(project)), root, notAsked, howToTrust(root))})
	}
	return t
}

// describeLapse says what changed since the person trusted the project.
func describeLapse(l trust.Lapse, root string) string {
	if l.New {
		return fmt.Sprintf("it is new since you trusted %s; %s", root, howToTrust(root))
	}
	return fmt.Sprintf("%s changed since you trusted %s; %s", strings.Join(l.Changed, ", "), root, howToTrust(root))
}

// pinScope is what the project at root's plugins are pinned against: the
// repository around it, the directory their processes start in, and what
// of the person's environment each is given, by which its entry is
// resolved first, as it is when it starts.
type pinScope struct {
	trust.Scope
	env envRule
}

func scopeOf(root, cwd string, env envRule) pinScope {
	return pinScope{Scope: trust.Scope{Project: root, Repository: trust.RepositoryRoot(root), Dir: cwd, Resolve: true}, env: env}
}

// snapshot digests what each project plugin would run. A plugin that
// cannot be digested (past a cap, a file it cannot read) is left out: it
// stays untrusted. Each file is read once through sums.
func snapshot(sc pinScope, project []*manifest.Manifest, sums *trust.Sums) (map[string]trust.Plugin, map[string]error) {
	now := make(map[string]trust.Plugin, len(project))
	var problems map[string]error
	for _, m := range project {
		one := sc.Scope
		one.Env = sc.env.of(m.Name)
		p, err := sums.Snapshot(one, m)
		if err != nil {
			if problems == nil {
				problems = map[string]error{}
			}
			problems[m.Name] = err
			continue
		}
		now[m.Name] = p
	}
	return now, problems
}

// sameAsRecord reports whether every project plugin is as rec recorded it:
// a declined project is asked about again once what it would run changes.
func sameAsRecord(rec trust.Project, now map[string]trust.Plugin, project []*manifest.Manifest) bool {
	for _, m := range project {
		p, ok := now[m.Name]
		if !ok {
			return false
		}
		if same, _ := rec.Check(p); !same {
			return false
		}
	}
	return true
}

func (t *projectTrust) hasUntrustedExec(project []*manifest.Manifest) bool {
	return len(t.untrustedExec(project)) > 0
}

// untrustedExec names the project's plugins that may not start: its
// processes and its remote servers (a wasm module runs sandboxed).
func (t *projectTrust) untrustedExec(project []*manifest.Manifest) []string {
	var names []string
	for _, m := range project {
		if m.Entry.Transport() != manifest.TransportWasm && !t.plugins[m.Name] {
			names = append(names, m.Name)
		}
	}
	return names
}

// question names what the repository would run: each plugin that would
// start a process or reach a remote server, with its whole command line
// (or URL) and the variables it reads. A project has at most
// manifest.MaxProjectPlugins, so every one is named.
func (t *projectTrust) question(project []*manifest.Manifest) TrustQuestion {
	q := TrustQuestion{Project: t.root}
	for _, m := range project {
		if m.Entry.Transport() != manifest.TransportWasm && !t.plugins[m.Name] {
			q.Plugins = append(q.Plugins, runsOf(m))
		}
	}
	return q
}

// perPlugin raises a repository's notices about its plugins one by one up
// to mostPerPlugin, and sums up the rest in one line: a repository of a
// thousand plugins that changed cannot bury the person in a thousand.
type perPlugin struct {
	notify func(bridge.Notice)
	shown  int
	more   int
}

// mostPerPlugin is how many of one run's per-plugin trust notices are shown.
const mostPerPlugin = 10

func (p *perPlugin) add(n bridge.Notice) {
	if p.shown == mostPerPlugin {
		p.more++
		return
	}
	p.shown++
	p.notify(n)
}

func (p *perPlugin) done() {
	if p.more > 0 {
		p.notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("and %d more of this repository's plugins are untrusted for the same kind of reason; bingo plugins lists each", p.more)})
	}
}

// listSome joins names for one line: the first ten, then how many more.
func listSome(names []string) string {
	const most = 10
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// decide records the person's answer at the prompt: yes trusts the project
// as it is now; no is remembered, so the same project is not asked about
// again until what it would run changes.
func (t *projectTrust) decide(cfg Config, project []*manifest.Manifest, now map[string]trust.Plugin, yes bool) {
	rec, err := record(t.root, now, !yes)
	if err == nil {
		err = put(t.store, rec)
	}
	if err != nil {
		cfg.Notify(bridge.Notice{Level: "error", Message: "cannot record your answer: " + err.Error()})
		return
	}
	if !yes {
		return
	}
	t.settings = true
	for _, m := range project {
		_, ok := now[m.Name]
		t.plugins[m.Name] = ok
		if ok {
			delete(t.why, m.Name)
		}
	}
}

// record makes the trust record of a project as it is now.
func record(root string, now map[string]trust.Plugin, declined bool) (trust.Project, error) {
	sr, err := trust.SettingsRecord(filepath.Join(root, ".bingo", "settings.json"))
	if err != nil {
		return trust.Project{}, err
	}
	return trust.Project{Root: realPath(root), At: time.Now().UTC(), Declined: declined, Plugins: now, Settings: sr}, nil
}

// realPath is the project's path with symlinks resolved, the key of its
// trust record: two spellings of one directory are one project.
func realPath(root string) string {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		return real
	}
	return root
}

func put(s *trust.Store, rec trust.Project) error {
	_, err := s.Update(func(projects map[string]trust.Project) error {
		projects[rec.Root] = rec
		return nil
	})
	return err
}

// TrustReport is what Trust recorded.
type TrustReport struct {
	Project    string
	Repository string             // the repository whose files are pinned (trust.RepositoryRoot)
	Record     string             // the trust file written
	Plugins    []trust.Plugin     // what each project plugin runs, by name
	Runs       map[string]Runs    // each of Plugins' command line and the variables it reads, by name
	Settings   string             // the settings file's record ("missing" if none)
	MovedAside string             // a trust file that could not be used, preserved here, if any
	MovedWhy   error              // why it could not be used
	Skipped    []manifest.Problem // broken manifests, which run nothing and are not trusted
	Unpinned   []error            // plugins that cannot be pinned (past a cap), so are not trusted, each naming its plugin
}

// ErrNoProject is Trust's and Revoke's error outside a project.
var ErrNoProject = errors.New("not in a project: no directory at or above it holds .bingo or .git")

// projectAround returns the project around cwd, or ErrNoProject saying
// why there is none. Below the home directory, with no .git nearer, the
// nearest .bingo is the person's own ~/.bingo: their home is no project,
// and saying "trusted /home/you" would pin their own plugins as a
// repository's.
func projectAround(home, cwd string) (string, error) {
	if root := manifest.Project(home, cwd); root != "" {
		return root, nil
	}
	if manifest.ProjectRoot(cwd) != "" {
		return "", belowHome(fmt.Sprintf("there is no project here: no directory at or above %s holds .git or .bingo but your home directory, whose .bingo is your own, not a project's", cwd))
	}
	return "", ErrNoProject
}

// belowHome is ErrNoProject for a folder below the home directory: it
// says why, and errors.Is(err, ErrNoProject) holds.
type belowHome string

func (e belowHome) Error() string        { return string(e) }
func (e belowHome) Is(target error) bool { return target == ErrNoProject }

// Trust records that the person trusts the project around cwd as it is
// now: its plugins may start and receive the person's grants, and its
// settings apply in full, until any of it changes.
func Trust(home, cwd string) (TrustReport, error) {
	root, err := projectAround(home, cwd)
	if err != nil {
		return TrustReport{}, err
	}
	// A broken manifest runs nothing, so it is not trusted: once fixed, it
	// is a new plugin, and trusted only when the person says so again.
	found, problems := manifest.Discover([]manifest.Layer{manifest.ProjectLayer(root)})
	sc := scopeOf(root, cwd, userEnvRule(home, os.Environ()))
	now, errs := snapshot(sc, found, trust.NewSums())
	rec, err := record(root, now, false)
	if err != nil {
		return TrustReport{}, err
	}
	store := trust.NewStore(home)
	_, _, before := store.Get(root)
	aside, err := store.Update(func(projects map[string]trust.Project) error {
		projects[rec.Root] = rec
		return nil
	})
	if err != nil {
		return TrustReport{}, err
	}
	r := TrustReport{Project: root, Repository: sc.Repository, Record: store.Path(), Settings: rec.Settings, MovedAside: aside, Skipped: problems,
		Runs: map[string]Runs{}}
	if aside != "" {
		r.MovedWhy = before
	}
	for _, m := range found {
		if p, ok := now[m.Name]; ok {
			r.Plugins = append(r.Plugins, p)
			r.Runs[m.Name] = runsOf(m)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		r.Unpinned = append(r.Unpinned, errs[name])
	}
	return r, nil
}

// Revoke withdraws the person's trust in the project around cwd (and a
// remembered "no"). was reports whether there was a record to withdraw.
func Revoke(home, cwd string) (project string, was bool, err error) {
	root, err := projectAround(home, cwd)
	if err != nil {
		return "", false, err
	}
	real := realPath(root)
	_, err = trust.NewStore(home).Update(func(projects map[string]trust.Project) error {
		_, was = projects[real]
		delete(projects, real)
		return nil
	})
	return root, was, err
}

// untrustedOwner reports whether plugin, a contribution's owner, is a
// project plugin the person has not trusted: what it contributes may ask
// for less, never act with the person's authority.
func (t *projectTrust) untrustedOwner(plugin string) bool {
	if t == nil {
		return false
	}
	trusted, project := t.plugins[plugin]
	return project && !trusted
}

// holdBack keeps each name an untrusted project plugin would take from one
// of the person's plugins with the person's (manifest.HoldBack): the
// person's settings name their own plugin (provider.plugin, plugins.<name>,
// allow rules, sandbox, mcp, env), and a repository must not step into
// those references by choosing the name. Once the project is trusted, the
// project wins the name, as the layers say. A plugin held back runs
// nothing and is untrusted no more as far as its name goes: the name is
// the person's plugin's. One notice names them all.
func (t *projectTrust) holdBack(cfg Config, found []*manifest.Manifest) ([]*manifest.Manifest, map[string]*manifest.Manifest) {
	kept, back := manifest.HoldBack(found, func(m *manifest.Manifest) bool { return !t.trusted(m) })
	if len(back) == 0 {
		return kept, nil
	}
	held := make(map[string]*manifest.Manifest, len(back))
	var names []string
	for _, m := range back {
		delete(t.plugins, m.Name)
		held[m.Name] = m
		names = append(names, m.Name)
	}
	cfg.Notify(bridge.Notice{Level: "warn", Message: fmt.Sprintf("this repository's plugins %s are held back: your own plugins of those names keep them until you trust %s; %s",
		listSome(names), t.root, howToTrust(t.root))})
	return kept, held
}

// ofProject reports whether plugin is one of the project's plugins,
// trusted or not.
func (t *projectTrust) ofProject(plugin string) bool {
	if t == nil {
		return false
	}
	_, ok := t.plugins[plugin]
	return ok
}
