# bingo-plugin-rpc. Needs GNU make 4, Go (1.26) and python3; node too for
# the Node example's tests (skipped without it). The Go tools it runs (staticcheck)
# are pinned by go.mod's tool directives: the module proxy, nothing else.
# make test installs the official MCP servers its black-box tests drive
# (make mcp-servers: npm and the npm registry, once; then from the cache;
# without npm those tests skip, except under CI, where they fail).
GO      ?= go
BIN     := bin/bingo
WASM    := examples/plugins/wordcount-wasm/plugin.wasm
MCP     := examples/plugins/wordcount-mcp/wordcount-mcp
MCPWASM := examples/plugins/wordcount-mcp-wasm/plugin.wasm
DEMO    := $(CURDIR)/.demo
NPMSRV  := .cache/mcp-servers

.PHONY: all build wasm mcp mcp-servers conformance demo test test-race test-cli check schema bench clean

all: build wasm mcp

build:
	$(GO) build -o $(BIN) ./cmd/bingo

# The wasm example is built, not committed: the standard toolchain builds
# it in a second, and a 3 MiB blob in every commit that touches it would
# only go stale.
# The C example is built by its own build.sh (clang and wasi-libc, which
# .ci/run installs); without clang it is left out, saying so.
wasm:
	GOOS=wasip1 GOARCH=wasm $(GO) build -o $(WASM) ./examples/plugins/wordcount-wasm
	@if command -v clang >/dev/null; then sh examples/plugins/wordcount-c/build.sh; \
	else echo "wasm: no clang (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32), so examples/plugins/wordcount-c is not built"; fi

# The MCP example server (a go-sdk server), native and for WASI, from one
# source; like the wasm example, built rather than committed.
mcp:
	$(GO) build -o $(MCP) ./examples/plugins/wordcount-mcp
	GOOS=wasip1 GOARCH=wasm $(GO) build -o $(MCPWASM) ./examples/plugins/wordcount-mcp

# The main job: the wordcount examples (a plugin in Python and in wasm, and an
# MCP server native and in wasm), installed in a scratch HOME, driven
# through the real binary.
demo: build wasm mcp
	@bash scripts/demo.sh $(CURDIR)/$(BIN) $(DEMO)

# The official MCP servers (server-everything, -filesystem, -memory) at the
# versions testdata/mcp-servers pins, with every dependency pinned by its
# lock file, installed into $(NPMSRV) for cmd/bingo's TestNPMServers: skipped
# when that lock is what is installed already. The tests skip without them,
# except under CI, where they fail.
mcp-servers:
	@if cmp -s testdata/mcp-servers/package-lock.json $(NPMSRV)/installed.json; then \
	  echo "mcp-servers: installed in $(NPMSRV)"; \
	elif ! command -v npm >/dev/null; then \
	  echo "mcp-servers: no npm here, so not installed (TestNPMServers skips, or fails under CI)"; \
	else \
	  rm -rf $(NPMSRV) && mkdir -p $(NPMSRV) && \
	  cp testdata/mcp-servers/package.json testdata/mcp-servers/package-lock.json $(NPMSRV)/ && \
	  (cd $(NPMSRV) && npm ci --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error) && \
	  cp testdata/mcp-servers/package-lock.json $(NPMSRV)/installed.json; \
	fi

# The official MCP client conformance suite (the version
# scripts/conformance/package-lock.json pins, on Node 22 from npm) drives
# bingo through scripts/conformance/adapter for specifications 2025-11-25
# and 2026-07-28: every scored scenario must pass.
conformance:
	scripts/conformance/run.sh

# The suite runs under the race detector, but for the few tests that are
# one goroutine grinding through tens of MiB or a wazero compilation, where
# -race multiplies minutes and finds nothing: those run without it, after.
# cmd/bingo's tests drive the built binary (built without -race) and spend
# their time waiting on it, so they run without -race too, four scripts at
# a time, beside the race run. python3 may be a version manager's shim
# (pyenv's costs a quarter of a second a start, and the suite starts
# hundreds): the tests run the interpreter it resolves to, linked first on
# their PATH. (docs/performance.md, "The test suite", says where the time
# goes.)
SLOW_UNDER_RACE := ^(TestParityWasm|TestHugeLines|TestWasmBuildRuns|TestOverCapLineIsNotKept|TestPatternRegexpIsValid)$$
SLOW_PKGS := ./examples/plugins/wordcount-wasm ./bridge ./internal/testplugin ./protocol ./host/gate
PYLINK := $(CURDIR)/.cache/python
TESTENV := PATH="$(PYLINK):$$PATH"

test: check mcp-servers
	@mkdir -p $(PYLINK) && py=$$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && ln -sfn "$$py" $(PYLINK)/python3 || rm -f $(PYLINK)/python3
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-race test-cli
	$(TESTENV) $(GO) test -count=1 -timeout 30m -run '$(SLOW_UNDER_RACE)' $(SLOW_PKGS)

test-race:
	$(TESTENV) $(GO) test -race -count=1 -timeout 30m -skip '$(SLOW_UNDER_RACE)' $$($(GO) list ./... | grep -v '/cmd/bingo$$')

test-cli:
	$(TESTENV) $(GO) test -count=1 -timeout 30m -parallel 4 ./cmd/bingo

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) mod tidy -diff
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(GO) tool staticcheck ./...
	$(GO) run ./schema/gen -check

schema:
	$(GO) run ./schema/gen

# The hot paths, each against a baseline measured in the same run: the
# bridge against a raw pipe to the same plugin (interleaved), a Go plugin
# (pluginkit) over exec and wasm against a raw pipe to a bare Go child,
# bingo's start-up against bare interpreters, wasm cold against warm start,
# wasm warm start (in a fresh runtime and in a new process) against
# wazero's own minimal file-cache start (budget 1.2x), 20 identical wasm
# plugins against one, bingo with 20 plugins installed against 1 (start-up on
# a warm declaration cache, budget 1.3x; peak RSS after a turn, budget 2x),
# a warm MCP tool call through bingo against a bare go-sdk client to the
# same server (interleaved), and a one-shot bingo call's exit after its
# answer (against bingo version's, and against server-everything when
# BINGO_MCP_SERVERS or .cache/mcp-servers holds it).
# BEFORE=<git ref> also times the testplugin built from that ref beside this
# tree's, in the same runs (make bench BEFORE=main).
# Issue 9's targets are printed as "<what>: <ratio>× (budget ≤ <n>×: met)";
# its throughput target is against KIT_BEFORE, the kit as it was when it
# ran sourcegraph/jsonrpc2 inside the plugin, which the in-flight run
# times beside this tree's unless BEFORE names another ref.
KIT_BEFORE ?= 25fbac9
bench:
	@before=$$(if [ -n "$(BEFORE)" ]; then bash scripts/bench-before.sh "$(BEFORE)"; fi) && \
	kit=$$(bash scripts/bench-before.sh "$(or $(BEFORE),$(KIT_BEFORE))") && \
	BINGO_BENCH_BEFORE=$$before $(GO) test -run '^$$' -bench 'ToolCall|BridgeOverhead|GoPluginCall' -benchtime 3000x ./internal/conformance && \
	BINGO_BENCH_BEFORE=$$kit $(GO) test -run '^$$' -bench 'GoPluginInFlight' -benchtime 30x ./internal/conformance
	$(GO) test -run '^$$' -bench 'MCPToolCallExec' -benchtime 2000x ./mcpbridge
	$(GO) test -run '^$$' -bench . -benchtime 10x ./cmd/bingo
	$(GO) test -run '^$$' -bench 'Start|RoundTrip' -benchtime 10x ./transport/wasm

clean:
	rm -rf bin $(WASM) $(MCP) $(MCPWASM) $(DEMO) $(NPMSRV)
