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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// MaxFileSize is the largest regular file Snapshot and SettingsRecord will
// hash: 512 MiB. A larger one is an error wrapping [ErrTooLarge].
const MaxFileSize = 512 << 20

// ErrTooLarge is wrapped by the error for a file over [MaxFileSize].
var ErrTooLarge = errors.New("file too large to pin")

// digestMagic starts every digest's input; a change to the rule changes it.
const digestMagic = "bingo-trust-v1"

// The records of one file, as kept in [Plugin.Files]: "file <sha256 hex>",
// "symlink <target>", "missing" or "other <type>".
const (
	recFile    = "file "
	recSymlink = "symlink "
	recMissing = "missing"
	recOther   = "other "
)

// Plugin is what one project plugin would run, as of the Snapshot that
// made it.
type Plugin struct {
	Name   string
	Digest string            // "sha256:<hex>"
	Files  map[string]string // relpath (slash-separated, from the project root) -> record ("file <hex>", "symlink <target>", "missing", "other <type>")
}

// Snapshot digests what m, a plugin of the project at projectRoot, would
// run now, by the rule in the package doc. A file over [MaxFileSize] is an
// error wrapping [ErrTooLarge] that names the file; so is a file the host
// cannot examine (permission denied, a file that changes while it is being
// read). No non-regular file is ever opened.
func Snapshot(projectRoot string, m *manifest.Manifest) (Plugin, error) {
	return snapshot(projectRoot, m, nil)
}

// snapshot is Snapshot, looking sums up in sums (nil: none).
func snapshot(projectRoot string, m *manifest.Manifest, sums *Sums) (Plugin, error) {
	if m == nil {
		return Plugin{}, errors.New("trust: no manifest to snapshot")
	}
	if m.File == "" || m.Root == "" {
		return Plugin{}, fmt.Errorf("trust: plugin %s: the manifest was not read from a file, so there is nothing to pin", m.Name)
	}
	lexRoot, err := filepath.Abs(projectRoot)
	if err != nil {
		return Plugin{}, fmt.Errorf("trust: project %s: %w", projectRoot, err)
	}
	realRoot, err := filepath.EvalSymlinks(lexRoot)
	if err != nil {
		return Plugin{}, fmt.Errorf("trust: project %s: %w", projectRoot, err)
	}
	pluginRoot, err := filepath.Abs(m.Root)
	if err != nil {
		return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
	}

	roots := spellings(lexRoot, realRoot, pluginRoot)
	files := make(map[string]string)
	for _, c := range candidates(m, pluginRoot) {
		rel, ok := "", false
		for _, r := range roots {
			if rel, ok = within(r, c); ok {
				break
			}
		}
		if !ok {
			continue // not the repository's file: the manifest pins its name
		}
		rec, err := record(c, false, sums)
		if err != nil {
			return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
		}
		files[rel] = rec
		if !strings.HasPrefix(rec, recSymlink) {
			continue
		}
		// A symlink's target string is pinned by its record; if it lands
		// on a regular file inside the project, that file's contents are
		// the repository's too.
		target, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue // dangling or looping: the link's record says so
		}
		trel, ok := within(realRoot, target)
		if !ok {
			continue
		}
		fi, err := os.Lstat(target)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		sum, err := hashRegular(target, fi, false, sums)
		if err != nil {
			return Plugin{}, fmt.Errorf("trust: plugin %s: %w", m.Name, err)
		}
		files[trel] = recFile + sum
	}
	return Plugin{Name: m.Name, Digest: digestOf(m.Name, files), Files: files}, nil
}

// spellings returns the ways the project root may be spelled in the
// manifest's paths: as given, as resolved, and as the ancestor of the
// plugin's directory that is the project (the manifest may have been
// discovered through a symlinked spelling of the project the caller did
// not use). A path inside any of them has the same relpath.
func spellings(lexRoot, realRoot, pluginRoot string) []string {
	roots := []string{lexRoot}
	if realRoot != lexRoot {
		roots = append(roots, realRoot)
	}
	for _, r := range roots {
		if _, ok := within(r, pluginRoot); ok {
			return roots
		}
	}
	for d := pluginRoot; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil && real == realRoot {
			return append(roots, d)
		}
		if filepath.Dir(d) == d {
			return roots
		}
	}
}

// candidates lists the paths m names, absolute and lexically cleaned, in
// the order the package doc gives them. A relative one is joined to
// pluginRoot.
func candidates(m *manifest.Manifest, pluginRoot string) []string {
	var out []string
	add := func(p string) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(pluginRoot, p)
		}
		out = append(out, filepath.Clean(p))
	}
	add(m.File)
	if m.Entry.Wasm != "" {
		add(m.Entry.Wasm)
	}
	if c := m.Entry.Command; c != "" && hasSeparator(c) {
		add(c)
	}
	for _, a := range m.Entry.Args {
		if looksLikePath(a) {
			add(a)
		}
		if _, v, ok := strings.Cut(a, "="); ok && looksLikePath(v) {
			add(v)
		}
	}
	names := make([]string, 0, len(m.Entry.Env))
	for k := range m.Entry.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if v := m.Entry.Env[k]; looksLikePath(v) {
			add(v)
		}
	}
	return out
}

func hasSeparator(s string) bool {
	return strings.ContainsRune(s, '/') || strings.ContainsRune(s, filepath.Separator)
}

// looksLikePath: absolute, or containing a path separator.
func looksLikePath(s string) bool {
	return s != "" && (filepath.IsAbs(s) || hasSeparator(s))
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
		return "", fmt.Errorf("cannot examine %s: %w", path, bareErr(err))
	}
	switch {
	case fi.Mode().IsRegular():
		sum, err := hashRegular(path, fi, false, sums)
		if err != nil {
			return "", err
		}
		return recFile + sum, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("cannot read the symlink %s: %w", path, bareErr(err))
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
			return "", fmt.Errorf("cannot examine %s: %w", path, bareErr(err))
		case sfi.Mode().IsRegular():
			sum, err := hashRegular(path, sfi, true, sums)
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

// hashRegular returns the hex sha256 of the regular file at path, which
// want (from Lstat, or Stat with follow) describes. It opens without
// blocking and checks that what it opened is that same regular file, so a
// file swapped for a FIFO in between is refused, not waited on. A version
// sums knows is not read again; one it reads, sums keeps.
func hashRegular(path string, want fs.FileInfo, follow bool, sums *Sums) (string, error) {
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
		return "", fmt.Errorf("cannot read %s: %w", path, bareErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, bareErr(err))
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, want) {
		return "", fmt.Errorf("%s changed while it was being read; try again", path)
	}
	if fi.Size() > MaxFileSize {
		return "", tooLarge(path, fi.Size())
	}
	h := sha256.New()
	// The file may grow while it is read: read one byte past the cap to
	// notice.
	n, err := io.Copy(h, io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, bareErr(err))
	}
	if n > MaxFileSize {
		return "", tooLarge(path, n)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sums.remember(path, fi, sum, hashedAt)
	return sum, nil
}

func tooLarge(path string, size int64) error {
	return fmt.Errorf("%s is %d bytes, over the %d-byte (512 MiB) limit for a file trust pins: %w", path, size, int64(MaxFileSize), ErrTooLarge)
}

// bareErr drops the path from an *fs.PathError: the message around it
// already names the file.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
