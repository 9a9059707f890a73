package trust

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/lookpath"
	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// MaxFileSize is the largest regular file SettingsRecord will hash:
// 512 MiB. A larger one is an error wrapping [ErrTooLarge].
const MaxFileSize = 512 << 20

// The caps on what one plugin's Snapshot pins: past either the plugin
// cannot be trusted, and the error (wrapping [ErrTooLarge]) says which
// cap and where. Each entry of a directory walked counts towards
// MaxPluginFiles, directories and links too, so a tree of empty
// directories is bounded as well.
const (
	MaxPluginFiles = 10_000
	MaxPluginBytes = 256 << 20
)

// ErrTooLarge is wrapped by the error for a file over [MaxFileSize] and
// for a plugin past [MaxPluginFiles] or [MaxPluginBytes].
var ErrTooLarge = errors.New("too large to pin")

// digestMagic starts every digest's input; a change to the rule changes it.
const digestMagic = "bingo-trust-v2"

// The records of one file, as kept in [Plugin.Files]: "file <sha256 hex>",
// "symlink <target>", "missing" or "other <type>"; and of one server's
// entry in an MCP configuration file, "entry <sha256 hex>".
const (
	recFile    = "file "
	recSymlink = "symlink "
	recMissing = "missing"
	recOther   = "other "
	recEntry   = "entry " // an MCP configuration file's entry for a server: "entry <sha256 hex of it>"
)

// Plugin is what one project plugin would run, as of the Snapshot that
// made it.
type Plugin struct {
	Name   string
	Digest string            // "sha256:<hex>"
	Files  map[string]string // relpath (slash-separated, from the project root) -> record ("file <hex>", "symlink <target>", "other <type>")
	// Outside lists, sorted, the files the entry names that lie outside
	// the repository and so are not pinned (such as /usr/bin/python3).
	// It is what Snapshot saw, never part of the digest or the record.
	Outside []string
}

// Scope says what a Snapshot is taken against.
type Scope struct {
	// Project is the project root: [Plugin.Files] is keyed by paths
	// relative to it.
	Project string
	// Repository is the directory whose files the repository controls
	// ([RepositoryRoot]): a file the entry names is pinned only inside
	// it. Empty means Project.
	Repository string
	// Dir is the directory the plugin's process starts in (the
	// session's); a relative argument names a file there. Empty means
	// bingo's working directory.
	Dir string
	// Env is the environment the process gets before entry.env is added
	// ("NAME=value"); its PATH, unless entry.env sets one, finds a bare
	// command. Nil means bingo's own.
	Env []string
	// Resolve says the manifest is as written: an entry whose ${VAR}s
	// expand when it starts is expanded from Env first
	// ([manifest.Manifest.Resolve]), as the host starts it, so the files
	// it names through a variable are pinned as they resolve now, and a
	// change of what they resolve to changes the records. An entry that
	// cannot be expanded (a variable unset) cannot start: it names no
	// file, and its entry or directory alone is pinned. Without Resolve
	// the manifest is taken as already resolved.
	Resolve bool
}

// RepositoryRoot returns the directory whose files a project's repository
// controls: the outermost ancestor of project, project included, that
// holds a .git entry (a directory, or a file as in a submodule or a
// worktree), else project itself. A project in a sub-directory of a
// repository (repo/sub/.bingo) is thus pinned against the whole
// repository, which can change any file in it. The outermost, not the
// nearest: a .git file is the repository's own to write, so a nearer one
// (repo/sub/.git, a submodule's) would let it declare its own files
// outside itself, and a file it names there would run unpinned.
func RepositoryRoot(project string) string {
	abs, err := filepath.Abs(project)
	if err != nil {
		return project
	}
	root := abs
	for dir := abs; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root = dir
		}
		if filepath.Dir(dir) == dir {
			return root
		}
	}
}

// Snapshot digests what m, a plugin of the project sc describes, would run
// now, by the rule in the package doc. A plugin past [MaxPluginFiles] or
// [MaxPluginBytes] is an error wrapping [ErrTooLarge] that says where; so
// is a file the host cannot examine (permission denied, a file that
// changes while it is being read). No non-regular file is ever opened.
func Snapshot(sc Scope, m *manifest.Manifest) (Plugin, error) {
	return snapshot(sc, m, nil)
}

// snapshot is Snapshot, looking sums up in sums (nil: none).
func snapshot(sc Scope, m *manifest.Manifest, sums *Sums) (Plugin, error) {
	if m == nil {
		return Plugin{}, errors.New("trust: no manifest to snapshot")
	}
	if m.File == "" || m.Root == "" {
		return Plugin{}, fmt.Errorf("trust: plugin %s: the manifest was not read from a file, so there is nothing to pin", m.Name)
	}
	if sc.Repository == "" {
		sc.Repository = sc.Project
	}
	p := &pinner{files: map[string]string{}, walked: map[string]bool{}, outside: map[string]bool{}, sums: sums, hasher: newHasher()}
	var err error
	if p.project, err = RealRoot(sc.Project); err != nil {
		return Plugin{}, err
	}
	if p.repo, err = RealRoot(sc.Repository); err != nil {
		return Plugin{}, err
	}
	if p.plugin, err = RealRoot(m.Root); err != nil {
		return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
	}
	if m.Server != "" {
		// A server of an MCP configuration file has no directory of its
		// own: it is pinned by its entry, so that another server's entry
		// changing leaves it trusted.
		file, err := filepath.EvalSymlinks(m.File)
		if err != nil {
			file = m.File
		}
		sum := sha256.Sum256(m.Raw)
		p.files[p.key(file)+"#"+m.Server] = recEntry + hex.EncodeToString(sum[:])
	} else if err := p.walk(p.plugin); err != nil {
		return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
	}
	if sc.Resolve {
		env := sc.Env
		if env == nil {
			env = os.Environ()
		}
		r, err := m.Resolve(env)
		if err != nil {
			return p.result(m.Name), nil
		}
		m = r
	}
	named, err := candidates(m, sc)
	if err != nil {
		return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
	}
	for _, c := range named {
		if err := p.named(c); err != nil {
			return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
		}
	}
	return p.result(m.Name), nil
}

// result is what p gathered, as the Plugin named name.
func (p *pinner) result(name string) Plugin {
	return Plugin{Name: name, Digest: digestOf(name, p.files), Files: p.files, Outside: slices.Sorted(maps.Keys(p.outside))}
}

// pinner gathers one plugin's records. Every path it holds is spelled
// with its directories' symlinks resolved, so a file has one key however
// the manifest reached it.
type pinner struct {
	project, repo, plugin string // real paths
	files                 map[string]string
	walked                map[string]bool // directories walked
	outside               map[string]bool
	entries               int   // towards MaxPluginFiles
	bytes                 int64 // towards MaxPluginBytes
	sums                  *Sums
	hasher                *hasher
}

// key is path's relpath from the project, slash-separated ("../lib/x.py"
// for a file of the repository above a nested project).
func (p *pinner) key(path string) string {
	rel, err := filepath.Rel(p.project, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

// ours reports whether path is the repository's (or the plugin's own,
// wherever its directory is) to pin.
func (p *pinner) ours(path string) bool {
	_, inRepo := within(p.repo, path)
	_, inPlugin := within(p.plugin, path)
	return inRepo || inPlugin
}

// count charges one more entry to the caps.
func (p *pinner) count(path string) error {
	p.entries++
	if p.entries > MaxPluginFiles {
		return fmt.Errorf("more than %d files to pin (the next is %s); a plugin this large cannot be trusted: %w", MaxPluginFiles, path, ErrTooLarge)
	}
	return nil
}

// walk records every entry below dir, a real directory path.
func (p *pinner) walk(dir string) error {
	if p.walked[dir] {
		return nil
	}
	p.walked[dir] = true
	f, err := openRead(dir, false)
	if err != nil {
		return fmt.Errorf("cannot read the directory %s: %w", dir, capped.Bare(err))
	}
	defer f.Close()
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if err := p.count(path); err != nil {
					return err
				}
				if err := p.walk(path); err != nil {
					return err
				}
				continue
			}
			if err := p.entry(path); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read the directory %s: %w", dir, capped.Bare(err))
		}
	}
}

// entry records path, an entry of a walked directory or a named file
// that is ours: a regular file by its contents, a symlink by its target
// (and what it resolves to, if ours), anything else by its type, never
// opened. A directory that is named rather than walked is recorded by
// its type alone.
func (p *pinner) entry(path string) error {
	k := p.key(path)
	if _, done := p.files[k]; done {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if absent(err) {
			return nil // gone since the directory was read: nothing runs it
		}
		return fmt.Errorf("cannot examine %s: %w", path, capped.Bare(err))
	}
	if err := p.count(path); err != nil {
		return err
	}
	switch {
	case fi.Mode().IsRegular():
		if p.bytes += fi.Size(); p.bytes > MaxPluginBytes {
			return fmt.Errorf("more than %d bytes (256 MiB) to pin (reached at %s); a plugin this large cannot be trusted: %w", MaxPluginBytes, path, ErrTooLarge)
		}
		sum, err := p.hasher.hashRegular(path, fi, false, p.sums)
		if err != nil {
			return err
		}
		p.files[k] = recFile + sum
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return fmt.Errorf("cannot read the symlink %s: %w", path, capped.Bare(err))
		}
		p.files[k] = recSymlink + target
		return p.resolved(path)
	default:
		p.files[k] = recOther + typeName(fi.Mode())
	}
	return nil
}

// resolved pins what the symlink at link leads to: a file or directory
// of ours is pinned (a directory walked), one outside is reported, a
// dangling or looping link is the link's record alone.
func (p *pinner) resolved(link string) error {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil
	}
	if !p.ours(target) {
		p.outside[target] = true
		return nil
	}
	fi, err := os.Lstat(target)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		return p.walk(target)
	}
	return p.entry(target)
}

// named pins c, a clean absolute path the entry names, if something is
// there: it is recorded if it is ours, or else reported as outside. A
// name of nothing is not recorded: should a file appear there, its new
// record lapses the trust.
func (p *pinner) named(c string) error {
	dir, err := filepath.EvalSymlinks(filepath.Dir(c))
	if err != nil {
		return nil
	}
	path := filepath.Join(dir, filepath.Base(c))
	if _, err := os.Lstat(path); err != nil {
		if absent(err) {
			return nil
		}
		return fmt.Errorf("cannot examine %s: %w", path, capped.Bare(err))
	}
	if !p.ours(path) {
		p.outside[c] = true
		return nil
	}
	return p.entry(path)
}

// candidates lists the paths m's entry names, absolute and lexically
// cleaned, as the process started in sc.Dir resolves them: entry.wasm,
// the file entry.command runs (package lookpath, with the PATH of the
// process's environment), every argument, the part of an argument after
// its first "=" (--config=conf.ini), and every entry.env value that looks
// like a path (absolute, or with a separator). A relative one is taken
// against sc.Dir.
func candidates(m *manifest.Manifest, sc Scope) ([]string, error) {
	dir := sc.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, filepath.Clean(p))
	}
	add(m.Entry.Wasm)
	if m.Entry.Command != "" {
		env := sc.Env
		if env == nil {
			env = os.Environ()
		}
		if path, err := lookpath.Find(m.Entry.Command, dir, m.Environ(env)); err == nil {
			add(path)
		}
	}
	for _, a := range m.Entry.Args {
		add(a)
		if _, v, ok := strings.Cut(a, "="); ok {
			add(v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Entry.Env)) {
		if v := m.Entry.Env[k]; filepath.IsAbs(v) || strings.ContainsRune(v, '/') || strings.ContainsRune(v, filepath.Separator) {
			add(v)
		}
	}
	return out, nil
}

// within returns p's slash-separated path relative to root if p (clean,
// absolute) is root or lies below it.
func within(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// record returns the record of path as Lstat sees it. With follow, a
// symlink's record goes on to the record of what it resolves to
// ("symlink <target> -> file <hex>"); without, it is "symlink <target>".
// A regular file's sum is looked up in sums (nil: none) and kept there.
func record(path string, follow bool, sums *Sums) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if absent(err) {
			return recMissing, nil
		}
		return "", fmt.Errorf("cannot examine %s: %w", path, capped.Bare(err))
	}
	switch {
	case fi.Mode().IsRegular():
		sum, err := newHasher().hashRegular(path, fi, false, sums)
		if err != nil {
			return "", err
		}
		return recFile + sum, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("cannot read the symlink %s: %w", path, capped.Bare(err))
		}
		rec := recSymlink + target
		if !follow {
			return rec, nil
		}
		sfi, err := os.Stat(path)
		switch {
		case err != nil && absent(err):
			return rec + " -> " + recMissing, nil
		case err != nil:
			return "", fmt.Errorf("cannot examine %s: %w", path, capped.Bare(err))
		case sfi.Mode().IsRegular():
			sum, err := newHasher().hashRegular(path, sfi, true, sums)
			if err != nil {
				return "", err
			}
			return rec + " -> " + recFile + sum, nil
		default:
			return rec + " -> " + recOther + typeName(sfi.Mode()), nil
		}
	default:
		return recOther + typeName(fi.Mode()), nil
	}
}

// absent reports whether err means there is no file at the path: nothing
// there, a non-directory where a directory was needed, a name no file can
// have, or a symlink loop on the way.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ELOOP)
}

// typeName names a non-regular file's type, one word.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "char-device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "irregular"
	}
}

// hasher hashes files one after another with one sha256 state and one
// buffer: a plugin's directory may hold thousands of small files, and a
// fresh 32 KiB buffer for each was most of the memory a snapshot churned.
type hasher struct {
	h   hash.Hash
	buf []byte
}

func newHasher() *hasher { return &hasher{h: sha256.New(), buf: make([]byte, 32<<10)} }

// hashRegular returns the hex sha256 of the regular file at path, which
// want (from Lstat, or Stat with follow) describes. It opens without
// blocking and checks that what it opened is that same regular file, so a
// file swapped for a FIFO in between is refused, not waited on. A version
// sums knows is not read again; one it reads, sums keeps.
func (hr *hasher) hashRegular(path string, want fs.FileInfo, follow bool, sums *Sums) (string, error) {
	if want.Size() > MaxFileSize {
		return "", tooLarge(path, want.Size())
	}
	if sum, ok := sums.lookup(path, want); ok {
		return sum, nil
	}
	hashedAt := time.Now()
	f, err := openRead(path, follow)
	if err != nil {
		if absent(err) {
			return "", fmt.Errorf("%s changed while it was being read; try again", path)
		}
		return "", fmt.Errorf("cannot read %s: %w", path, capped.Bare(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, capped.Bare(err))
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, want) {
		return "", fmt.Errorf("%s changed while it was being read; try again", path)
	}
	if fi.Size() > MaxFileSize {
		return "", tooLarge(path, fi.Size())
	}
	h := hr.h
	h.Reset()
	// The file may grow while it is read: read one byte past the cap to
	// notice.
	n, err := io.CopyBuffer(h, io.LimitReader(f, MaxFileSize+1), hr.buf)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, capped.Bare(err))
	}
	if n > MaxFileSize {
		return "", tooLarge(path, n)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sums.remember(path, fi, sum, hashedAt)
	return sum, nil
}

func tooLarge(path string, size int64) error {
	return fmt.Errorf("%s is %d bytes, over the %d-byte (512 MiB) limit for a file trust reads: %w", path, size, int64(MaxFileSize), ErrTooLarge)
}

// digestOf is a plugin's digest: sha256 over the length-prefixed fields
// digestMagic, name, the number of files, then each relpath and its record
// in relpath order.
func digestOf(name string, files map[string]string) string {
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	h := sha256.New()
	field(h, digestMagic)
	field(h, name)
	count(h, uint64(len(rels)))
	for _, rel := range rels {
		field(h, rel)
		field(h, files[rel])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func field(h hash.Hash, s string) {
	count(h, uint64(len(s)))
	h.Write([]byte(s))
}

func count(h hash.Hash, n uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	h.Write(b[:])
}

// SettingsRecord is the record of a project's settings file (normally
// <project>/.bingo/settings.json): "missing" if there is none, "file
// <sha256 hex>" for a regular file, "other <type>" for anything else
// (never opened). Settings are read through a symlink wherever it points,
// so a symlink's record pins what it resolves to as well:
// "symlink <target> -> file <hex>" (or "-> missing", "-> other <type>").
func SettingsRecord(file string) (string, error) {
	rec, err := record(file, true, nil)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	return rec, nil
}
