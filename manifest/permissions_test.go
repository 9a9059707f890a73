package manifest

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// "permissions" is read in the words of the person's sandbox.<name>, and
// anything else is refused with why.
func TestPermissions(t *testing.T) {
	root := filepath.Join(t.TempDir(), "p")
	m, err := parse([]byte(`{"name": "p", "version": "1", "entry": {"command": "x"}, "permissions": {"writable": true, "read": ["~/.cache/p", "/opt/p"], "write": ["~/.local/p"], "network": ["api.example.com:443", "*:80"]}}`), root)
	if err != nil {
		t.Fatal(err)
	}
	want := Permissions{Writable: true, Read: []string{"~/.cache/p", "/opt/p"}, Write: []string{"~/.local/p"}, Network: []string{"api.example.com:443", "*:80"}}
	if !reflect.DeepEqual(m.Permissions, want) {
		t.Errorf("permissions %+v, want %+v", m.Permissions, want)
	}
	if got := want.String(); got != "writes the working directory; reads ~/.cache/p, /opt/p; writes ~/.local/p; network api.example.com:443, *:80" {
		t.Errorf("String() = %q", got)
	}
	for perms, why := range map[string]string{
		`{"read": ["notes"]}`:          `"permissions.read[0]" is "notes"; it must be an absolute path or one from ~/`,
		`{"network": ["example.com"]}`: `"permissions.network[0]" is "example.com"; it must be "host:port", or "*"`,
		`{"writable": "yes"}`:          `"permissions.writable" must be true or false, found a string`,
		`{"exec": true}`:               `exec`,
		`{"write": "/tmp"}`:            `"permissions.write" must be an array of strings, found a string`,
		`[]`:                           `"permissions" must be a JSON object`,
	} {
		_, err := parse([]byte(`{"name": "p", "version": "1", "entry": {"command": "x"}, "permissions": `+perms+`}`), root)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("permissions %s: %v, want %q", perms, err, why)
		}
	}
}
