package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bingo/bingo-plugin-rpc/protocol"
)

// Permissions is what a manifest says its plugin needs beyond the default
// sandbox, in the vocabulary of the person's sandbox.<name> (see
// docs/plugins.md): the working directory writable, further paths to read
// or write (absolute, or from the home directory, "~/..."), hosts to
// connect to ("host:port", "*" for any). The person grants it by trusting
// the plugin's project, or by installing the plugin; more only in their
// own settings.
type Permissions struct {
	Writable bool     `json:"writable,omitempty"`
	Read     []string `json:"read,omitempty"`
	Write    []string `json:"write,omitempty"`
	Network  []string `json:"network,omitempty"`
}

// Empty reports whether p asks for nothing.
func (p Permissions) Empty() bool {
	return !p.Writable && len(p.Read) == 0 && len(p.Write) == 0 && len(p.Network) == 0
}

// String says what p asks for, as bingo plugins and the trust prompt show
// it: "writes the working directory; reads ~/.cache/x; network
// api.example.com:443".
func (p Permissions) String() string {
	var parts []string
	if p.Writable {
		parts = append(parts, "writes the working directory")
	}
	if len(p.Read) > 0 {
		parts = append(parts, "reads "+strings.Join(p.Read, ", "))
	}
	if len(p.Write) > 0 {
		parts = append(parts, "writes "+strings.Join(p.Write, ", "))
	}
	if len(p.Network) > 0 {
		parts = append(parts, "network "+strings.Join(p.Network, ", "))
	}
	return strings.Join(parts, "; ")
}

// parsePermissions reads the manifest's "permissions".
func parsePermissions(raw json.RawMessage) (Permissions, error) {
	var p Permissions
	obj, _, err := object(raw, `"permissions"`, "permissions.", []string{"writable", "read", "write", "network"})
	if err != nil {
		return p, err
	}
	if v, ok := obj["writable"]; ok {
		if k := protocol.KindOf(v); k != "a boolean" {
			return p, fmt.Errorf(`"permissions.writable" must be true or false, found %s`, k)
		}
		_ = json.Unmarshal(v, &p.Writable)
	}
	path := func(s string) error {
		if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
			return errors.New("an absolute path or one from ~/")
		}
		return nil
	}
	for _, f := range []struct {
		key   string
		dst   *[]string
		valid func(string) error
	}{{"read", &p.Read, path}, {"write", &p.Write, path}, {"network", &p.Network, hostPort}} {
		v, ok := obj[f.key]
		if !ok {
			continue
		}
		if k := protocol.KindOf(v); k != "an array" {
			return p, fmt.Errorf(`"permissions.%s" must be an array of strings, found %s`, f.key, k)
		}
		var list []json.RawMessage
		_ = json.Unmarshal(v, &list)
		for i, e := range list {
			var s string
			if k := protocol.KindOf(e); k != "a string" {
				return p, fmt.Errorf(`"permissions.%s[%d]" must be a string, found %s`, f.key, i, k)
			}
			_ = json.Unmarshal(e, &s)
			if err := f.valid(s); err != nil || strings.ContainsAny(s, "\x00\n") {
				what := "well formed"
				if err != nil {
					what = err.Error()
				}
				return p, fmt.Errorf(`"permissions.%s[%d]" is %q; it must be %s`, f.key, i, s, what)
			}
			*f.dst = append(*f.dst, s)
		}
	}
	return p, nil
}

// hostPort accepts "*" or "host:port" (a host "*" for any host), as the
// person's sandbox.<name>.network does.
func hostPort(s string) error {
	if s == "*" {
		return nil
	}
	i := strings.LastIndexByte(s, ':')
	port := s[i+1:]
	if i <= 0 || len(port) == 0 || len(port) > 5 || strings.Trim(port, "0123456789") != "" || strings.ContainsAny(s[:i], " \t") {
		return errors.New(`"host:port", or "*"`)
	}
	return nil
}
