package wasm

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// A guest asleep (a Go guest's time.Sleep: poll_oneoff on a clock alone)
// wakes when it is killed, and when its Host closes: wazero's own sleep
// was time.Sleep, and the instance, and whoever waited for it, lived as
// long as the sleep.
func TestKillWakesASleepingGuest(t *testing.T) {
	for _, end := range []string{"kill", "close"} {
		t.Run(end, func(t *testing.T) {
			h := sharedHost
			if end == "close" {
				var err error
				if h, err = NewHost(context.Background(), HostConfig{CacheDir: warmCache}); err != nil {
					t.Fatal(err)
				}
			}
			p := startProbe(t, h, Config{})
			p.ask("echo awake")
			if _, err := p.conn.Write([]byte("sleep 3600000\n")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // let it fall asleep; it wakes either way
			if end == "kill" {
				_ = p.conn.Kill()
			} else {
				closeWithin(t, h, 10*time.Second)
			}
			if err := waitWithin(t, p.conn, 10*time.Second); !errors.Is(err, ErrKilled) {
				t.Errorf("Wait = %v, want ErrKilled", err)
			}
		})
	}
}

// The sleep ends with its context, and a sleep of the longest time there
// is, which wazero asks for when a poll had no clock and every descriptor
// was ready at once, is no sleep.
func TestSleepUntilDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sleep := sleepUntilDone(ctx)
	start := time.Now()
	sleep(math.MaxInt64)
	sleep(int64(time.Millisecond))
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	sleep(int64(time.Hour))
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("an hour's sleep ended %v after its cancel", d)
	}
	sleep(int64(time.Hour)) // after the end: at once
}
