package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"

	"github.com/bingo/bingo-plugin-rpc/internal/capped"
	"github.com/bingo/bingo-plugin-rpc/internal/diskrecord"
)

// Store keeps what authorization got, one file a server name:
// Dir/<server>.json, 0600 in a 0700 directory, a record in it for each
// URL the name was authorized at (a project's server of the same name
// at another URL has its own, and leaves the person's alone). It is
// under ~/.bingo, never in a repository, and no log or trace holds what
// is in it.
type Store struct{ Dir string }

// DefaultDir is the store's directory under home.
func DefaultDir(home string) string { return filepath.Join(home, ".bingo", "oauth") }

// file is one server name's file: a record for each URL it was
// authorized for (a grant never goes to another URL).
type file struct {
	URLs map[string]*record `json:"urls"`
	// The one URL's record of a file written before there were more,
	// taken into URLs when read.
	URL     string            `json:"url,omitempty"`
	Current string            `json:"current,omitempty"`
	Issuers map[string]*grant `json:"issuers,omitempty"`
}

// record is what the name has at one URL: a grant for each
// authorization server that issued one.
type record struct {
	Current string            `json:"current"` // the issuer of the grant in use
	Issuers map[string]*grant `json:"issuers"`
}

// grant is what one authorization server gave: the client it knows bingo
// as (a dynamic registration's secret included), its endpoints, and the
// token with its refresh token.
type grant struct {
	ClientID     string           `json:"clientId"`
	ClientSecret string           `json:"clientSecret,omitempty"`
	AuthURL      string           `json:"authUrl"`
	TokenURL     string           `json:"tokenUrl"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle"`
	RedirectURL  string           `json:"redirectUrl"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

func (g *grant) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: g.ClientID, ClientSecret: g.ClientSecret, RedirectURL: g.RedirectURL, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: g.AuthStyle},
	}
}

// maxRecord caps a store file as read: a few grants are a few KiB.
const maxRecord = 1 << 20

func (s Store) path(server string) string { return filepath.Join(s.Dir, server+".json") }

// load is server's record for url; an empty one when there is none.
func (s Store) load(server, url string) (*record, error) {
	f, err := s.read(server)
	if err != nil {
		return nil, err
	}
	if r := f.URLs[url]; r != nil {
		if r.Issuers == nil {
			r.Issuers = map[string]*grant{}
		}
		return r, nil
	}
	return &record{Issuers: map[string]*grant{}}, nil
}

// read is server's file; an empty one when there is none.
func (s Store) read(server string) (*file, error) {
	data, err := capped.Read(s.path(server), maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return &file{URLs: map[string]*record{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %v", s.path(server), err)
	}
	if f.URLs == nil {
		f.URLs = map[string]*record{}
	}
	if f.URL != "" && f.URLs[f.URL] == nil {
		f.URLs[f.URL] = &record{Current: f.Current, Issuers: f.Issuers}
	}
	f.URL, f.Current, f.Issuers = "", "", nil
	return &f, nil
}

// update changes server's record for url by change (an empty record when
// there is none), its others kept, and, unless change reports it changed
// nothing, writes the file whole (diskrecord:
// 0600, renamed over the old one), its directory made 0700. The read,
// the change and the write hold the file's lock, so two bingo processes
// saving grants under one name (a login beside a refresh) keep both.
func (s Store) update(server, url string, change func(*record) bool) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return err
	}
	unlock, err := diskrecord.Lock(s.path(server))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		// No flock here: a grant saved unlocked beats none.
	case err != nil:
		return err
	default:
		defer unlock()
	}
	f, err := s.read(server)
	if err != nil {
		// An unreadable file is replaced: the grant at hand is worth
		// more than what no one can read.
		f = &file{URLs: map[string]*record{}}
	}
	r := f.URLs[url]
	if r == nil {
		r = &record{}
		f.URLs[url] = r
	}
	if r.Issuers == nil {
		r.Issuers = map[string]*grant{}
	}
	if !change(r) {
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return diskrecord.Replace(s.path(server), append(data, '\n'), diskrecord.Options{Temp: "." + server + ".*.tmp"})
}

// Forget removes what the store keeps of server, at every URL, and
// reports whether it kept anything.
func (s Store) Forget(server string) (bool, error) {
	// Under the file's lock, so that a refresh saving at the same time
	// (another bingo run's) does not write back what was forgotten.
	if _, err := os.Lstat(s.path(server)); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	unlock, err := diskrecord.Lock(s.path(server))
	switch {
	case errors.Is(err, errors.ErrUnsupported):
	case err != nil:
		return false, err
	default:
		defer unlock()
	}
	err = os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
