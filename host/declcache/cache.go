package declcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bingo/bingo-plugin-rpc/host/trust"
	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
	"github.com/bingo/bingo-plugin-rpc/internal/fileversion"
	"github.com/bingo/bingo-plugin-rpc/manifest"
	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// keep is how many entries one plugin's file holds, the latest first.
const keep = 4

// maxFile caps one plugin's cache file, written or read. A handshake line
// may be 64 MiB (protocol.DefaultMaxLine), and any plugin, a cloned
// repository's too, chooses its declaration: without a cap each run would
// read and decode up to keep of them per plugin. Older entries make room
// for a new one; a declaration too large alone is not cached (the plugin
// is started each run instead). A var so that tests can lower it.
var maxFile int64 = 4 << 20

// Cache is the declaration cache in one directory. It is safe for
// concurrent use, and by concurrent processes.
type Cache struct {
	dir  string
	sums *trust.Sums
}

// New returns the cache in dir (created when first written), digesting
// files through sums, which it shares with whoever else digests them.
func New(dir string, sums *trust.Sums) *Cache { return &Cache{dir: dir, sums: sums} }

// Start is what a plugin is started with, besides its files: all of it
// goes into the key.
type Start struct {
	Transport     string
	Root, DataDir string
	Dir           string          // the directory the declaration may depend on: the project's, or the working directory (see package doc)
	Config        json.RawMessage // plugins.<name>, as written
	Env           []string        // NAME=value, as the plugin gets them
	Grants        []string        // anything else it is given, one line each
}

// Entry is one cached declaration. The declaration is kept as the JSON it
// was written as: only a hit's is decoded (Decode).
type Entry struct {
	Key         string
	Declaration json.RawMessage
	Refused     []string
	Files       []trust.FileSum
	// Failed, if not "", is why the plugin's handshake failed for what
	// its own files make it say (StoreFailure), and Declaration is null:
	// the plugin is not started to hear it again.
	Failed string

	declSum string // as read: the declaration's sum
}

// intact reports whether an entry's declaration matches its sum: only a
// hit's, and those of the entries a Store keeps beside its own, are
// summed.
func (e *Entry) intact() bool { return e.declSum == sumOf(e.Declaration) }

// A cache file is a header line, then one line an entry, the latest
// first: the hex sha256 of the entry's head and declaration sum (with the
// tab between), a tab, the entry's head (below), a tab, the hex sha256 of
// the declaration, a tab, and the declaration's JSON (compact JSON holds
// no raw tab or newline). Every head is checked, as every head is read;
// only the hit's declaration is summed and decoded: a Lookup does not
// scan the other entries' declarations, which are most of the file. The sum is what lets a hit's
// declaration be decoded without being checked again: every declaration
// Store is given is one a handshake kept, already held to the protocol's
// rules, and a hit whose sum does not match (damaged, or edited by hand)
// is a miss, which Store then drops.
//
// A head is words separated by one space: the key; then "f", the file's
// path Go-quoted, its version and its sum, for each file sum kept; then
// "r" and the message Go-quoted, for each thing refused of the
// declaration; then, for a failed handshake, "x" and why, Go-quoted. A Go-quoted string holds no raw space, tab or newline, and
// the other words (a key, a version, a hex sum) none either. It is not
// JSON because every run reads every plugin's heads, and decoding them as
// JSON was most of reading the cache.
const header = "bingo declaration cache 4\n"

// appendHead appends e's head to b.
func appendHead(b []byte, e Entry) []byte {
	b = append(b, e.Key...)
	for _, f := range e.Files {
		b = append(b, " f "...)
		b = strconv.AppendQuote(b, f.Path)
		b = append(b, ' ')
		b = append(b, f.Version...)
		b = append(b, ' ')
		b = append(b, f.SHA256...)
	}
	for _, r := range e.Refused {
		b = append(b, " r "...)
		b = strconv.AppendQuote(b, r)
	}
	if e.Failed != "" {
		b = append(b, " x "...)
		b = strconv.AppendQuote(b, e.Failed)
	}
	return b
}

// parseHead reads a head into e's key, files and refusals.
func parseHead(h string, e *Entry) error {
	words := headWords{rest: h}
	e.Key = words.next()
	for words.err == nil && words.rest != "" {
		switch tag := words.next(); tag {
		case "f":
			f := trust.FileSum{Path: words.quoted(), Version: words.next(), SHA256: words.next(), Settled: true} // only settled sums are written
			e.Files = append(e.Files, f)
		case "r":
			e.Refused = append(e.Refused, words.quoted())
		case "x":
			e.Failed = words.quoted()
		default:
			return fmt.Errorf("a head holds %q where a file or a refusal starts", tag)
		}
	}
	if words.err == nil && e.Key == "" {
		words.err = errors.New("a head has no key")
	}
	return words.err
}

// headWords takes a head apart, word by word, keeping the first problem.
type headWords struct {
	rest string
	err  error
}

// next is the next bare word.
func (w *headWords) next() string {
	word, rest, _ := strings.Cut(w.rest, " ")
	if word == "" && w.err == nil {
		w.err = errors.New("a head is cut short")
	}
	w.rest = rest
	return word
}

// quoted is the next word, a Go-quoted string, unquoted.
func (w *headWords) quoted() string {
	q, err := strconv.QuotedPrefix(w.rest)
	if err == nil {
		var s string
		if s, err = strconv.Unquote(q); err == nil {
			w.rest = strings.TrimPrefix(w.rest[len(q):], " ")
			return s
		}
	}
	if w.err == nil {
		w.err = errors.New("a head holds a string that is not quoted")
	}
	return ""
}

// Key is a plugin's key as of a Lookup, to Store its declaration under.
type Key struct {
	name   string
	digest string
	files  []trust.FileSum // the settled sums of its files
}

// Valid reports whether the plugin could be keyed: one whose files cannot
// be digested is not cached.
func (k Key) Valid() bool { return k.digest != "" }

// Lookup keys m as started with s and returns the entry cached under that
// key, or nil. problem, if not nil, is worth a line in the plugin's log: a
// cache file that could not be read (a miss), or files that could not be
// digested (no key: the plugin is not cached).
func (c *Cache) Lookup(m *manifest.Manifest, s Start) (k Key, hit *Entry, problem error) {
	path, ok := c.path(m.Name)
	if !ok {
		return Key{}, nil, fmt.Errorf("declaration cache: %q cannot name a file; not cached", m.Name)
	}
	entries, problem := read(path)
	var known []trust.FileSum
	for _, e := range entries {
		known = append(known, e.Files...)
	}
	sums := c.sums.Assuming(known)
	snap, err := sums.Snapshot(trust.Scope{Project: "/", Dir: s.Dir, Env: s.Env}, m)
	if err != nil {
		return Key{}, nil, fmt.Errorf("declaration cache: %w; not cached", err)
	}
	k = Key{name: m.Name, digest: digest(m, snap, s)}
	for _, rel := range slices.Sorted(maps.Keys(snap.Files)) {
		if f, ok := sums.Get("/" + rel); ok && f.Settled && strings.HasPrefix(snap.Files[rel], "file ") {
			k.files = append(k.files, f)
		}
	}
	for i, e := range entries {
		if e.Key != k.digest {
			continue
		}
		if !e.intact() {
			return k, nil, fmt.Errorf("declaration cache: %s: an entry does not match its checksum (damaged, or edited); starting the plugin instead", path)
		}
		if !slices.Equal(e.Files, k.files) {
			// The same contents at new versions (a touch, a copy): keep
			// the new versions, so the next run need not read them.
			_ = c.write(k, e)
		}
		return k, &entries[i], problem
	}
	return k, nil, problem
}

// Decode returns e's declaration. It is not held to a handshake's rules
// again: Store is given only declarations a handshake kept, and the
// line's sum vouches that this one is what Store wrote.
func (e *Entry) Decode() (protocol.InitializeResult, error) {
	var decl protocol.InitializeResult
	err := json.Unmarshal(e.Declaration, &decl)
	return decl, err
}

// Store caches decl, a declaration a handshake kept, and what was refused
// of it, under k: the latest of the plugin's entries.
func (c *Cache) Store(k Key, decl protocol.InitializeResult, refused []string) error {
	raw, err := json.Marshal(decl)
	if err != nil {
		return err
	}
	return c.write(k, Entry{Declaration: raw, Refused: refused})
}

// StoreFailure caches, under k, that the plugin's handshake failed for
// what the plugin said of itself (bridge.IdentityError): its files answer
// the same at every start, so until they change (and with them k) the
// host reports why without starting it, which for an untrusted project's
// plugins is most of what a run costs.
func (c *Cache) StoreFailure(k Key, why string) error {
	return c.write(k, Entry{Declaration: json.RawMessage("null"), Failed: why})
}

// write stores e (its declaration and what it says of it; k gives the
// rest) as the latest of the plugin's entries.
func (c *Cache) write(k Key, e Entry) error {
	path, ok := c.path(k.name)
	if !ok || !k.Valid() {
		return nil
	}
	old, _ := read(path)
	decl := e.Declaration
	entries := []Entry{{Key: k.digest, Declaration: decl, Refused: e.Refused, Files: k.files, Failed: e.Failed}}
	for _, e := range old {
		if e.Key != k.digest && len(entries) < keep && e.intact() {
			entries = append(entries, e)
		}
	}
	data := []byte(header)
	for i, e := range entries {
		head := slices.Concat(appendHead(nil, e), []byte("\t"+sumOf(e.Declaration)))
		line := slices.Concat([]byte(sumOf(head)+"\t"), head, []byte("\t"), e.Declaration, []byte("\n"))
		if i > 0 && int64(len(data)+len(line)) > maxFile {
			break // the older entries make room
		}
		data = append(data, line...)
	}
	if int64(len(data)) > maxFile {
		return fmt.Errorf("declaration cache: %s's declaration is %d bytes, over the cache's %d-byte cap; not cached, so it is started each run", k.name, len(decl), maxFile)
	}
	if err := diskrecord.Replace(path, data, diskrecord.Options{Temp: "." + k.name + ".*.tmp"}); err != nil {
		return fmt.Errorf("declaration cache: %w", err)
	}
	return nil
}

// Prune removes the file of each plugin that is gone: one live does not
// name (a plugin the caller found is never gone) whose every entry names
// a file that no longer exists. An entry can hit again only when its
// files digest as they did, so one missing a file is dead unless that
// very file comes back, which costs the plugin one start to cache again.
// A plugin uninstalled, or renamed (its directory, and so its files'
// paths, with it), is gone; one from a project other than the caller's
// is not, since its files are still there. An entry naming no file (its
// files had just changed when it was stored: see trust.FileSum.Settled)
// says nothing of where the plugin was, so it keeps its file. A file
// that cannot be read or understood is kept too: it may be another
// bingo's. Prune returns the names it removed the files of.
//
// A file rewritten by another process between Prune's read and its
// removal is removed all the same: a cache entry lost, one start.
func (c *Cache) Prune(live func(name string) bool) []string {
	dirents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, d := range dirents {
		name, ok := strings.CutSuffix(d.Name(), ".json")
		if !ok || !d.Type().IsRegular() || live(name) {
			continue
		}
		path, ok := c.path(name)
		if !ok {
			continue
		}
		if entries, err := read(path); err == nil && len(entries) > 0 && !slices.ContainsFunc(entries, alive) && os.Remove(path) == nil {
			removed = append(removed, name)
		}
	}
	return removed
}

// pruneEvery is how often PruneIfDue prunes. Pruning reads the file of
// every plugin the run did not find, other projects' included, which a
// run that starts nothing should not pay for each time; a file left a
// day after its plugin went costs nothing but its bytes.
const pruneEvery = 24 * time.Hour

// pruneStamp names the file, in the cache's directory, whose time is
// that of the last prune.
const pruneStamp = ".pruned"

// PruneIfDue prunes (see Prune) if the last prune was pruneEvery ago or
// more, or never was, and then stamps the time; else it costs one stat.
// A stamp in the future (a clock set back) is due.
func (c *Cache) PruneIfDue(live func(name string) bool) []string {
	stamp := filepath.Join(c.dir, pruneStamp)
	now := time.Now()
	if st, err := os.Stat(stamp); err == nil && !st.ModTime().After(now) && now.Sub(st.ModTime()) < pruneEvery {
		return nil
	}
	removed := c.Prune(live)
	if os.WriteFile(stamp, nil, 0o600) == nil {
		_ = os.Chtimes(stamp, now, now) // an existing stamp is not rewritten by an empty write
	}
	return removed
}

// alive reports whether e may still hit: it names no file (so nothing
// says otherwise), or every file it names is there.
func alive(e Entry) bool {
	for _, f := range e.Files {
		if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// path is the file of the plugin named name, if the name can be one.
func (c *Cache) path(name string) (string, bool) {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || strings.ContainsRune(name, '/') {
		return "", false
	}
	return filepath.Join(c.dir, name+".json"), true
}

// read returns the entries of the file at path: none, and no problem, if
// there is no file; none, and the problem, if it cannot be understood.
func read(path string) ([]Entry, error) {
	data, err := capped.Read(path, maxFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, capped.ErrTooLarge): // written by hand, or by a bingo with another cap
		err = fmt.Errorf("%s is over the cache's %d-byte cap", path, maxFile)
	}
	if err != nil {
		return nil, fmt.Errorf("declaration cache: %w; starting the plugin instead", err)
	}
	bad := func(why string) ([]Entry, error) {
		return nil, fmt.Errorf("declaration cache: %s: %s; starting the plugin instead", path, why)
	}
	rest, ok := bytes.CutPrefix(data, []byte(header))
	if !ok {
		return bad("not a cache file of this bingo")
	}
	var entries []Entry
	for len(rest) > 0 {
		line, more, ok := bytes.Cut(rest, []byte("\n"))
		sum, body, tab1 := bytes.Cut(line, []byte("\t"))
		h, declSum, tab2 := bytes.Cut(body, []byte("\t"))
		declSum, decl, tab3 := bytes.Cut(declSum, []byte("\t"))
		if !ok || !tab1 || !tab2 || !tab3 {
			return bad("a line is cut short")
		}
		if string(sum) != sumOf(body[:len(h)+1+len(declSum)]) {
			return bad("an entry does not match its checksum (damaged, or edited)")
		}
		rest = more
		e := Entry{Declaration: decl, declSum: string(declSum)}
		if err := parseHead(string(h), &e); err != nil {
			return bad(err.Error())
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// sumOf is the hex sha256 of b.
func sumOf(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// digestMagic starts every key's input; a change to the rule changes it.
const digestMagic = "bingo-declaration-v3"

// digest is the key of m, whose files snap digests, started with s: the
// sha256 of every input, each after its length, each list after its
// count, which is unambiguous (and, unlike a JSON encoding, cheap enough
// to take for every plugin on every run: the environment alone is most of
// the input).
func digest(m *manifest.Manifest, snap trust.Plugin, s Start) string {
	var env []string
	for _, kv := range s.Env {
		if name, _, _ := strings.Cut(kv, "="); !volatile[name] && name != "PWD" {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	b := make([]byte, 0, 4096)
	word := func(v string) { b = append(append(strconv.AppendInt(b, int64(len(v)), 10), ':'), v...) }
	list := func(vs []string) {
		b = append(strconv.AppendInt(b, int64(len(vs)), 10), '#')
		for _, v := range vs {
			word(v)
		}
	}
	for _, v := range []string{digestMagic, build(), strconv.Itoa(protocol.Version), m.Name, snap.Digest, m.Entry.Wasm, m.Entry.Command, m.Entry.URL} {
		word(v)
	}
	list(m.Entry.Args)
	for _, v := range []string{s.Transport, s.Root, s.DataDir, s.Dir, string(s.Config)} {
		word(v)
	}
	list(env)
	list(slices.Sorted(slices.Values(s.Grants)))
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// build names the bingo binary that runs, by its file's version, once a
// process. A hit is decoded without the handshake's checks, which a newer
// build may have made stricter than the one that kept the entry (a name
// reserved since, say) within the same protocol version: each build keeps
// its own entries, and a new one misses once for each plugin.
var build = fileversion.Executable

// volatile are the variables a shell sets on its own from one command to
// the next. PWD, the working directory, is left out too: Start.Dir says
// which directory a declaration is keyed by.
var volatile = map[string]bool{"_": true, "OLDPWD": true, "SHLVL": true}
