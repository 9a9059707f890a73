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

// Store keeps what authorization got, one file a server:
// Dir/<server>.json, 0600 in a 0700 directory. It is under ~/.bingo,
// never in a repository, and no log or trace holds what is in it.
type Store struct{ Dir string }

// DefaultDir is the store's directory under home.
func DefaultDir(home string) string { return filepath.Join(home, ".bingo", "oauth") }

// record is one server's file: the URL it was authorized for (a grant
// never goes to another URL under the same name), and a grant for each
// authorization server that issued one.
type record struct {
	URL     string            `json:"url"`
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

// load is server's record; an empty one when there is none.
func (s Store) load(server string) (*record, error) {
	data, err := capped.Read(s.path(server), maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return &record{Issuers: map[string]*grant{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", s.path(server), err)
	}
	if r.Issuers == nil {
		r.Issuers = map[string]*grant{}
	}
	return &r, nil
}

// save writes server's record whole (diskrecord: 0600, renamed over the
// old one), its directory made 0700.
func (s Store) save(server string, r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return err
	}
	return diskrecord.Replace(s.path(server), append(data, '\n'), diskrecord.Options{Temp: "." + server + ".*.tmp"})
}

// Forget removes what the store keeps of server, and reports whether it
// kept anything.
func (s Store) Forget(server string) (bool, error) {
	err := os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
