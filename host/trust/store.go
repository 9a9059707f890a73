package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
)

// FileVersion is the "version" this package reads and writes. Version 1
// pinned only the files an entry names, by another digest rule: its
// records are not read (an [OldVersionError]), so a project trusted under
// them is asked about again.
const FileVersion = 2

// maxStoreSize caps how much of trust.json is read; a real one is a few
// kilobytes per project.
const maxStoreSize = 64 << 20

// ErrCorrupt is wrapped by every error for a trust file that cannot be
// understood: not JSON, not the expected shape, or (see [VersionError])
// written by a newer bingo. A corrupt record trusts nothing.
var ErrCorrupt = errors.New("corrupt trust record")

// VersionError is the error for a trust file whose version this bingo does
// not know: written by a newer bingo. errors.Is(err, ErrCorrupt) holds, so
// it trusts nothing; unlike a corrupt file it is never moved aside.
type VersionError struct {
	File    string
	Version int64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s was written by a newer bingo (format version %d; this bingo reads version %d): upgrade bingo to use it",
		e.File, e.Version, FileVersion)
}

// Is makes a VersionError an [ErrCorrupt].
func (e *VersionError) Is(target error) bool { return target == ErrCorrupt }

// OldVersionError is the error for a trust file an older bingo wrote, by
// a digest rule that pinned less than this one. errors.Is(err,
// ErrCorrupt) holds, so it trusts nothing; [Store.Update] keeps it as
// trust.json.v<version> and starts afresh.
type OldVersionError struct {
	File    string
	Version int64
}

func (e *OldVersionError) Error() string {
	return fmt.Sprintf("%s holds trust recorded by an older bingo (format version %d), whose pins covered fewer files than this one's; every project in it is untrusted until you run \"bingo trust\" in it again",
		e.File, e.Version)
}

// Is makes an OldVersionError an [ErrCorrupt].
func (e *OldVersionError) Is(target error) bool { return target == ErrCorrupt }

// Project is one trust decision about one project.
type Project struct {
	Root     string            // the project's real path (see [RealRoot]); the record's key
	At       time.Time         // when the person decided
	Declined bool              // the person said no at the prompt (recorded so bingo asks once)
	Plugins  map[string]Plugin // by name, as snapshotted when trusted or declined
	Settings string            // the SettingsRecord when trusted or declined
}

// RealRoot is the key a project is recorded under: its absolute path with
// every symlink resolved, so two spellings of one directory are one
// project. The directory must exist.
func RealRoot(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("trust: project %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("trust: project %s: %w", root, err)
	}
	return real, nil
}

// Store is the person's trust record, ~/.bingo/trust.json. Its methods may
// be called from any goroutine, and any number of processes may share the
// file.
type Store struct {
	path string
	err  error // a Store without a usable home refuses everything

	// afterTemp, if set, runs in Update after the new record is written
	// and synced to its temp file and before the rename. A non-nil error
	// stops Update there, leaving the temp file behind as a crash would.
	// Tests only.
	afterTemp func(tmp string) error
}

// NewStore returns the store in home/.bingo/trust.json. home must be an
// absolute path: trust must never land in whatever directory bingo runs in
// (which may be the repository being trusted), so a Store for an empty or
// relative home refuses every call.
func NewStore(home string) *Store {
	if home == "" || !filepath.IsAbs(home) {
		return &Store{err: fmt.Errorf("trust: no home directory to keep trust.json in (home is %q, which is not an absolute path)", home)}
	}
	return &Store{path: filepath.Join(home, ".bingo", "trust.json")}
}

// Path returns the trust file's path ("" for a Store without a home).
func (s *Store) Path() string { return s.path }

// Get returns the record of the project at root, which is resolved to its
// real path first. No file is (zero, false, nil). A corrupt file is an
// error wrapping [ErrCorrupt] and never a record.
func (s *Store) Get(root string) (Project, bool, error) {
	if s.err != nil {
		return Project{}, false, s.err
	}
	real, err := RealRoot(root)
	if err != nil {
		return Project{}, false, err
	}
	projects, err := s.read()
	if err != nil {
		return Project{}, false, err
	}
	p, ok := projects[real]
	return p, ok, nil
}

// Update changes the record: it reads it, calls fn with every project by
// its real path, and writes what fn leaves unless fn returns an error.
//
// It holds an exclusive lock on trust.json.lock beside the file from read
// to write, so concurrent Updates, in this process or others, each see the
// one before. The new record is written to a temp file in the same
// directory, synced, renamed over trust.json and the directory synced: a
// crash leaves the old record or the new one, never a mix. The file is
// mode 0600; ~/.bingo is created 0700 if missing.
//
// A corrupt trust.json is kept: it is renamed to trust.json.corrupt (or
// .corrupt.1, ... if that is taken), the rename's target is returned as
// movedAside, and fn starts from no projects. So is one an older bingo
// wrote ([OldVersionError]), as trust.json.v<version>. A file written by
// a newer bingo (a [VersionError]) is never overwritten: Update refuses.
//
// fn must key each project by its real path ([RealRoot]); a key that is
// not an absolute, clean path, or a Project.Root or Plugin.Name that
// disagrees with its key, is refused and nothing is written.
func (s *Store) Update(fn func(projects map[string]Project) error) (movedAside string, err error) {
	if s.err != nil {
		return "", s.err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	// Without a lock two bingo processes could lose each other's
	// records, and a lost "no" is better refused than guessed at.
	unlock, err := diskrecord.Lock(s.path)
	if err != nil {
		return "", fmt.Errorf("trust: %w", err)
	}
	defer unlock()
	s.removeStaleTemps(dir)

	projects, err := s.read()
	var verr *VersionError
	var old *OldVersionError
	switch {
	case errors.As(err, &verr):
		return "", fmt.Errorf("trust: not changing it: %w", err)
	case errors.As(err, &old):
		if movedAside, err = s.moveAside(".v" + strconv.FormatInt(old.Version, 10)); err != nil {
			return "", err
		}
		projects = map[string]Project{}
	case errors.Is(err, ErrCorrupt):
		if movedAside, err = s.moveAside(".corrupt"); err != nil {
			return "", err
		}
		projects = map[string]Project{}
	case err != nil:
		return "", err
	}

	if err := fn(projects); err != nil {
		return movedAside, err
	}
	data, err := encode(projects)
	if err != nil {
		return movedAside, err
	}
	return movedAside, s.write(data)
}

// tempPrefix begins the name of a temp file Update writes.
const tempPrefix = "trust.json.tmp-"

// removeStaleTemps removes temp files a crashed Update left. The caller
// holds the lock, so no live Update owns one.
func (s *Store) removeStaleTemps(dir string) {
	stale, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	for _, f := range stale {
		os.Remove(f)
	}
}

// moveAside renames a trust.json it cannot use to the first free of
// trust.json<suffix>, trust.json<suffix>.1, ... The caller holds the lock.
func (s *Store) moveAside(suffix string) (string, error) {
	for i := 0; i < 100; i++ {
		to := s.path + suffix
		if i > 0 {
			to += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("trust: cannot move %s aside: %w", s.path, err)
		}
		if err := os.Rename(s.path, to); err != nil {
			return "", fmt.Errorf("trust: cannot move %s aside: %w", s.path, err)
		}
		return to, nil
	}
	return "", fmt.Errorf("trust: cannot move %s aside: %s%s through %s.99 all exist; remove some", s.path, s.path, suffix, suffix)
}

// write replaces trust.json with data atomically and durably.
func (s *Store) write(data []byte) error {
	if err := diskrecord.Replace(s.path, data, diskrecord.Options{Temp: tempPrefix + "*", Sync: true, BeforeRename: s.afterTemp}); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	return nil
}

// The file's JSON. Project and Plugin keep no JSON tags of their own so
// the format is decided here alone.
type (
	fileJSON struct {
		Version  int64                  `json:"version"`
		Projects map[string]projectJSON `json:"projects"`
	}
	projectJSON struct {
		At       time.Time             `json:"at"`
		Declined bool                  `json:"declined,omitempty"`
		Plugins  map[string]pluginJSON `json:"plugins"`
		Settings string                `json:"settings"`
	}
	pluginJSON struct {
		Digest string            `json:"digest"`
		Files  map[string]string `json:"files"`
	}
)

// read returns every project in the file; none if there is no file.
func (s *Store) read() (map[string]Project, error) {
	data, err := capped.Read(s.path, maxStoreSize)
	var nr capped.NotRegularError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return map[string]Project{}, nil
	case errors.As(err, &nr):
		return nil, fmt.Errorf("trust: cannot read %s: not a regular file (%s)", s.path, typeName(nr.Mode))
	case errors.Is(err, capped.ErrTooLarge):
		return nil, s.corrupt("larger than %d bytes", maxStoreSize)
	case err != nil:
		return nil, fmt.Errorf("trust: cannot read %s: %w", s.path, capped.Bare(err))
	}
	return s.decode(data)
}

func (s *Store) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, s.path, fmt.Sprintf(format, args...))
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// decode parses the file: the version first, so a newer format is
// reported as such rather than as a shape it does not have, then the rest
// strictly (an unknown field is corruption, not something to drop).
func (s *Store) decode(data []byte) (map[string]Project, error) {
	var head struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, s.corrupt("%v", err)
	}
	if head.Version == nil {
		return nil, s.corrupt(`no "version"`)
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(head.Version)), 10, 64)
	switch {
	case err != nil || v < 1:
		return nil, s.corrupt(`"version" is %s, not a format version`, head.Version)
	case v < FileVersion:
		return nil, &OldVersionError{File: s.path, Version: v}
	case v > FileVersion:
		return nil, &VersionError{File: s.path, Version: v}
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var file fileJSON
	if err := dec.Decode(&file); err != nil {
		return nil, s.corrupt("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, s.corrupt("more data after the record")
	}
	projects := make(map[string]Project, len(file.Projects))
	for root, pj := range file.Projects {
		if !filepath.IsAbs(root) || filepath.Clean(root) != root {
			return nil, s.corrupt("project %q is not an absolute, clean path", root)
		}
		p := Project{Root: root, At: pj.At, Declined: pj.Declined, Settings: pj.Settings, Plugins: make(map[string]Plugin, len(pj.Plugins))}
		for name, pl := range pj.Plugins {
			if name == "" {
				return nil, s.corrupt("project %s: a plugin without a name", root)
			}
			if !digestRE.MatchString(pl.Digest) || digestOf(name, pl.Files) != pl.Digest {
				return nil, s.corrupt("project %s: plugin %s: its digest does not match its files", root, name)
			}
			files := pl.Files
			if files == nil {
				files = map[string]string{}
			}
			p.Plugins[name] = Plugin{Name: name, Digest: pl.Digest, Files: files}
		}
		projects[root] = p
	}
	return projects, nil
}

// encode checks what Update's fn left and renders the file.
func encode(projects map[string]Project) ([]byte, error) {
	file := fileJSON{Version: FileVersion, Projects: make(map[string]projectJSON, len(projects))}
	for root, p := range projects {
		if !filepath.IsAbs(root) || filepath.Clean(root) != root {
			return nil, fmt.Errorf("trust: project key %q is not an absolute, clean path (use RealRoot)", root)
		}
		if p.Root != "" && p.Root != root {
			return nil, fmt.Errorf("trust: project recorded under %s says its root is %s", root, p.Root)
		}
		pj := projectJSON{At: p.At, Declined: p.Declined, Settings: p.Settings, Plugins: make(map[string]pluginJSON, len(p.Plugins))}
		for name, pl := range p.Plugins {
			if name == "" || (pl.Name != "" && pl.Name != name) {
				return nil, fmt.Errorf("trust: project %s: plugin recorded under %q is named %q", root, name, pl.Name)
			}
			if pl.Digest != digestOf(name, pl.Files) {
				return nil, fmt.Errorf("trust: project %s: plugin %s: its digest does not match its files (record what Snapshot returned)", root, name)
			}
			pj.Plugins[name] = pluginJSON{Digest: pl.Digest, Files: pl.Files}
		}
		file.Projects[root] = pj
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("trust: %w", err)
	}
	return append(data, '\n'), nil
}
