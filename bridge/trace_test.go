package bridge

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// With Trace, every wire line both ways lands in the plugin's log, stamped
// and with its direction; without it, none does.
func TestTraceWritesEveryLineToTheLog(t *testing.T) {
	for _, on := range []bool{false, true} {
		e := mustStart(t, echoScript(), func(o *Options) { o.Trace = on })
		if out, err := call(t, e.tool("plugin__t__echo"), context.Background(), "c1", nil); err != nil || out.Text() != "echo {}" {
			t.Fatalf("%v %v", out, err)
		}
		e.plugin.Close()
		log := e.log.String()
		if !on {
			if strings.Contains(log, " -> ") || strings.Contains(log, " <- ") {
				t.Fatalf("untraced, the log holds wire lines:\n%s", log)
			}
			continue
		}
		for _, want := range []string{
			`(?m)^\S+ -> \{"id":0,"jsonrpc":"2.0","method":"initialize","params":\{"protocol":5,.*\}$`,
			`(?m)^\S+ <- \{"id":0,"jsonrpc":"2.0","result":\{"protocol":5,"name":"t".*\}$`,
			`(?m)^\S+ -> \{"id":"h1","jsonrpc":"2.0","method":"tool/call",.*\}$`,
			`(?m)^\S+ <- \{"id":"h1","jsonrpc":"2.0","result":\{"output":.*\}$`,
		} {
			if !regexp.MustCompile(want).MatchString(log) {
				t.Errorf("log lacks %s:\n%s", want, log)
			}
		}
		stamp := regexp.MustCompile(`(?m)^(\S+) -> `).FindStringSubmatch(log)
		if stamp == nil {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, stamp[1]); err != nil {
			t.Errorf("timestamp %q: %v", stamp[1], err)
		}
	}
}
