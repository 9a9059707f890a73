//go:build wasip1

// Command signalwait is the shape of most Go stdio servers (mcp-go's
// ServeStdio among them): it calls signal.Notify for a graceful stop,
// reads each line of stdin on a goroutine of its own, and answers each
// from another goroutine, while the next read waits. Each line is
// answered with itself. At EOF it stops the notification
// (signal.Stop) and exits 0.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o signalwait.wasm ./testdata/signalwait
// (TestSignalWatcher does this).
package main

import (
	"bufio"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	in := bufio.NewReader(os.Stdin)
	answers := make(chan string)
	go func() {
		for a := range answers {
			os.Stdout.WriteString(a)
		}
	}()
	for {
		lines := make(chan string)
		go func() {
			line, err := in.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}()
		line, ok := <-lines
		if !ok {
			break
		}
		go func() { answers <- line }()
	}
	signal.Stop(stop)
}
