package oauth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// Grants saved at once under one name, as two bingo processes do (a login
// beside another's refresh), are all kept: each read, change and write
// holds the file's lock. Without it, one write renames over another's.
func TestConcurrentSavesKeepEveryGrant(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			issuer := fmt.Sprintf("https://as%d.example", i)
			if err := s.update("srv", "https://srv.example/mcp", func(r *record) bool {
				r.Current = issuer
				r.Issuers[issuer] = &grant{ClientID: issuer}
				return true
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	r, err := s.load("srv", "https://srv.example/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Issuers) != n {
		t.Errorf("%d grants kept of %d saved", len(r.Issuers), n)
	}
}

// A refresh stored after a logout (another run's, whose grant was loaded
// before it) does not bring the forgotten grant back; a login does store.
func TestRefreshAfterLogoutStaysForgotten(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	h := &Handler{o: Options{Store: s, Server: "srv", URL: "https://srv.example/mcp"}}
	g := &grant{ClientID: "c", Token: &oauth2.Token{AccessToken: "a1"}}
	if err := h.save("https://as.example", g); err != nil {
		t.Fatal(err)
	}
	if forgot, err := s.Forget("srv"); !forgot || err != nil {
		t.Fatalf("Forget = %v, %v", forgot, err)
	}
	refreshed := *g
	refreshed.Token = &oauth2.Token{AccessToken: "a2"}
	if err := h.saveRefreshed("https://as.example", &refreshed); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path("srv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the forgotten grant is back after a refresh: %v", err)
	}
	if forgot, err := s.Forget("srv"); forgot || err != nil {
		t.Errorf("Forget of nothing = %v, %v", forgot, err)
	}
}
