package settings_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bingo/bingo-plugin-rpc/host/settings"
)

func ExampleLoad() {
	home, _ := os.MkdirTemp("", "home")
	project, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(home)
	defer os.RemoveAll(project)
	write := func(dir, content string) {
		_ = os.MkdirAll(filepath.Join(dir, ".bingo"), 0o700)
		_ = os.WriteFile(filepath.Join(dir, ".bingo", "settings.json"), []byte(content), 0o600)
	}
	write(home, `{"permissions": {"deny": ["plugin__evil__*"]}, "deadlines": {"tool": "20s"}}`)
	write(project, `{"permissions": {"allow": ["plugin__wordcount__count"]}, "deadlines": {"tool": "90s"}}`)

	s, errs := settings.Load(settings.Files(home, project)...)
	fmt.Println(len(errs), s.Permissions.Deny, s.Permissions.Allow, s.Deadlines.Tool, s.Deadlines.Hook)
	// Output: 0 [plugin__evil__*] [plugin__wordcount__count] 1m30s 2s
}
