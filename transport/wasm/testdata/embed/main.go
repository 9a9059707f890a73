// Command embed is a program that embeds package wasm as one built on it
// would: it starts the module at -module in a Host on the cache directory
// -cache, waits for it, and prints "exit N" or the start's error on one
// line. Built with -ldflags '-X main.hook=yes' it handles
// wasm.CompileChildArg first thing in main, as the package asks; built
// without, it does not, and its flags refuse the argument. main.build
// (any text) makes builds that differ. The tests build it to run builds of
// one program over one cache (builds_test.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero/sys"

	"github.com/bingo/bingo-plugin-rpc/transport/wasm"
)

// Set by the linker (-X).
var hook, build string

func main() {
	if hook == "yes" && len(os.Args) > 1 && os.Args[1] == wasm.CompileChildArg {
		os.Exit(wasm.CompileChild(os.Args[2:], os.Stdin, os.Stderr))
	}
	cache := flag.String("cache", "", "the compilation cache directory")
	module := flag.String("module", "", "the module to start")
	flag.Parse()
	if err := run(*cache, *module); err != nil {
		fmt.Printf("build %q: %v\n", build, err)
		os.Exit(1)
	}
}

func run(cache, module string) error {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.HostConfig{CacheDir: cache})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	c, err := h.Transport(wasm.Config{Path: module, Name: "m"}).Start(ctx)
	if err != nil {
		return err
	}
	var exit *sys.ExitError
	if err := c.Wait(); !errors.As(err, &exit) {
		return fmt.Errorf("wait: %v", err)
	}
	fmt.Println("exit", exit.ExitCode())
	return nil
}
