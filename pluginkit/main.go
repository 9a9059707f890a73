package pluginkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Main serves p on the process's stdin and stdout and exits: 0 once stdin
// ends, otherwise with a one-line message on stderr and the error's
// ExitCode() if it has one, 1 if not. It uses no signals and no network,
// so a plugin built with GOOS=wasip1 GOARCH=wasm runs it unchanged.
func Main(p *Plugin) {
	os.Exit(exit(p.Serve(context.Background(), os.Stdin, os.Stdout), p.Name, os.Stderr))
}

// exit turns Serve's answer into an exit status, saying why on stderr.
func exit(err error, name string, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}
