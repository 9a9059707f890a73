#!/usr/bin/env bash
# Builds the testplugin (native and wasip1) from a git ref into a directory,
# for BenchmarkGoPlugin to time beside the working tree's build in the same
# run:
#
#   dir=$(scripts/bench-before.sh main)
#   BINGO_BENCH_BEFORE=$dir go test -run '^$' -bench GoPlugin ./internal/conformance
#
# The ref is exported with git archive into a scratch directory (no
# worktree is added to the shared repository) and built there.
set -euo pipefail
ref=${1:?usage: bench-before.sh REF [OUTDIR]}
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/bingo-before-XXXXXX")}
repo=$(cd "$(dirname "$0")/.." && pwd)
src=$(mktemp -d "${TMPDIR:-/tmp}/bingo-src-XXXXXX")
trap 'rm -rf "$src"' EXIT
git -C "$repo" archive "$ref" | tar -x -C "$src"
mkdir -p "$out"
(cd "$src" && go build -o "$out/testplugin" ./internal/testplugin/cmd/testplugin)
(cd "$src" && GOOS=wasip1 GOARCH=wasm go build -o "$out/testplugin.wasm" ./internal/testplugin/cmd/testplugin)
echo "$out"
