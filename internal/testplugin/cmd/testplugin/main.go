// Command testplugin is internal/testplugin as a process: the native
// binary transport/exec runs, and, built with GOOS=wasip1 GOARCH=wasm, the
// module transport/wasm runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/bingo/bingo-plugin-rpc/internal/testplugin"
)

func main() { os.Exit(run()) }

// run serves until stdin ends (0) or the exit tool asks for a status.
func run() int {
	err := testplugin.Serve(context.Background(), os.Stdin, os.Stdout, os.Stderr)
	if ee := (*testplugin.ExitError)(nil); errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testplugin:", err)
		return 1
	}
	return 0
}
