package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bingo/bingo-plugin-rpc/host"
	"github.com/bingo/bingo-plugin-rpc/sdk"
)

func TestUsageErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, args := range [][]string{
		{}, {"--nope"}, {"call"}, {"call", "t", "{bad"}, {"call", "a", "b", "c"}, {"complete"}, {"plugins", "x"},
		{"--cwd", "/no/such/dir", "plugins"},
	} {
		var out, errw bytes.Buffer
		if got := Main(args, strings.NewReader(""), &out, &errw); got != ExitUsage {
			t.Errorf("bingo %q: exit %d, want %d (stderr %q)", args, got, ExitUsage, errw.String())
		}
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	var out, errw bytes.Buffer
	if got := Main([]string{"--help"}, nil, &out, &errw); got != ExitOK || !strings.Contains(errw.String(), "bingo call [flags] TOOL [JSON]") {
		t.Fatalf("exit %d, stderr %q", got, errw.String())
	}
}

// interactive builds a run whose person answers from answers.
func interactive(answers string) (*run, *bytes.Buffer) {
	var errw bytes.Buffer
	r := &run{stdin: strings.NewReader(answers), stdout: &bytes.Buffer{}, stderr: &errw, interactive: true}
	r.prompter = &prompter{in: r.stdin, out: &errw}
	return r, &errw
}

func TestApproveAsksThePerson(t *testing.T) {
	call := sdk.ToolCall{Name: "plugin__w__count", Input: json.RawMessage(`{"path":"a"}`)}
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false, "whatever\n": false} {
		r, errw := interactive(answer)
		ok, err := r.Approve(context.Background(), call, "no rule allows it")
		if err != nil || ok != want {
			t.Errorf("answer %q: ok=%v err=%v", answer, ok, err)
		}
		if !strings.Contains(errw.String(), `Run plugin__w__count {"path":"a"}? (no rule allows it) [y/N]`) {
			t.Errorf("prompt = %q", errw.String())
		}
	}
	r, _ := interactive("") // the person's input ended: nobody to ask
	if _, err := r.Approve(context.Background(), call, "x"); !errors.Is(err, host.ErrNoOneToAsk) {
		t.Fatalf("err = %v", err)
	}
}

func TestNobodyToAskWithoutATerminal(t *testing.T) {
	r, _ := interactive("y\n")
	r.interactive = false
	if _, err := r.Approve(context.Background(), sdk.ToolCall{}, ""); !errors.Is(err, host.ErrNoOneToAsk) {
		t.Fatalf("err = %v", err)
	}
	if _, err := r.Ask(context.Background(), "t", "q"); !errors.Is(err, host.ErrNoOneToAsk) {
		t.Fatalf("err = %v", err)
	}
}

func TestAskPutsTheToolsQuestion(t *testing.T) {
	r, errw := interactive("blue\n")
	got, err := r.Ask(context.Background(), "plugin__p__t", "which colour?")
	if err != nil || got != "blue" || !strings.Contains(errw.String(), "plugin__p__t asks: which colour?") {
		t.Fatalf("%q %v %q", got, err, errw.String())
	}
}

func TestProgress(t *testing.T) {
	r, errw := interactive("")
	r.Progress("plugin__w__count", "reading a")
	if errw.String() != "plugin__w__count: reading a\n" {
		t.Fatalf("not a terminal: one line per progress, got %q", errw.String())
	}
	r.o.print = true
	r.Progress("plugin__w__count", "reading b")
	if strings.Contains(errw.String(), "reading b") {
		t.Fatal("--print shows no progress")
	}
	r.o.print = false
	r.liveProgress = true
	errw.Reset()
	r.Progress("t", "x")
	r.endProgress()
	if errw.String() != "\r\x1b[2Kt: x\r\x1b[2K" {
		t.Fatalf("terminal: redrawn in place then cleared, got %q", errw.String())
	}
}
