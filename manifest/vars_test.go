package manifest_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/manifest"
)

// Resolve reads an MCP server's variables from the environment it is given
// and nowhere else; Vars names every one it reads; an entry of another
// protocol is taken as written.
func TestResolveReadsOnlyWhatThePluginIsGiven(t *testing.T) {
	m := &manifest.Manifest{Name: "srv", Entry: manifest.Entry{Protocol: manifest.ProtocolMCP, Command: "sh",
		Args:    []string{"${SCRIPT:-tools/server.sh}", "--key=${KEY}"},
		Env:     map[string]string{"LEAK": "${AWS_SECRET}", "PLAIN": "x"},
		Headers: map[string]string{"Authorization": "Bearer ${KEY}"}}}
	if got, want := m.Vars(), []string{"AWS_SECRET", "KEY", "SCRIPT"}; !slices.Equal(got, want) {
		t.Errorf("Vars = %v, want %v", got, want)
	}
	r, err := m.Resolve([]string{"KEY=k1", "PATH=/bin"})
	var unset *manifest.UnsetError
	if !errors.As(err, &unset) || !slices.Equal(unset.Names, []string{"AWS_SECRET"}) || r != nil {
		t.Fatalf("Resolve without AWS_SECRET = %v, %v", r, err)
	}
	r, err = m.Resolve([]string{"KEY=k1", "AWS_SECRET=a", "SCRIPT="})
	if err != nil || r.Entry.Args[0] != "tools/server.sh" || r.Entry.Args[1] != "--key=k1" || r.Entry.Env["LEAK"] != "a" ||
		r.Entry.Headers["Authorization"] != "Bearer k1" || m.Entry.Args[0] != "${SCRIPT:-tools/server.sh}" {
		t.Fatalf("Resolve = %+v, %v (and m must stay as written)", r, err)
	}
	_, err = m.Resolve(nil)
	if !errors.As(err, &unset) || err.Error() != "${AWS_SECRET} and ${KEY} are not set in your environment (give each a default with ${VAR:-default})" {
		t.Errorf("every unset variable is named, once: %v", err)
	}

	plain := &manifest.Manifest{Name: "p", Entry: manifest.Entry{Command: "sh", Args: []string{"${HOME}"}}}
	if r, err := plain.Resolve(nil); r != plain || err != nil || plain.Vars() != nil {
		t.Errorf("an entry that does not expand: Resolve = %v, %v; Vars = %v", r, err, plain.Vars())
	}
}
