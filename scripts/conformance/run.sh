#!/usr/bin/env bash
# Runs the official MCP client conformance suite (the version
# scripts/conformance/package-lock.json pins, on the Node 22 it pins from
# the npm package node) through bingo, for both current specifications:
# every scored scenario must pass; extension scenarios are reported, not
# scored. The suite is installed into .cache/conformance once, then from
# there while the lock is unchanged. Results: .cache/conformance/results.
# BINGO names the bingo to drive (default: built from this checkout).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=.cache/conformance
lock=scripts/conformance/package-lock.json
if ! cmp -s "$lock" "$dir/installed.json"; then
  rm -rf "$dir/node_modules"
  mkdir -p "$dir"
  cp scripts/conformance/package.json "$lock" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$lock" "$dir/installed.json"
fi
root=$PWD
if [ -z "${BINGO:-}" ]; then
  go build -o "$dir/bingo" ./cmd/bingo
  BINGO=$root/$dir/bingo
fi
go build -o "$dir/adapter" ./scripts/conformance/adapter
export BINGO
export PATH="$root/$dir/node_modules/node/bin:$PATH"
node --version
status=0
for spec in 2025-11-25 2026-07-28; do
  echo "conformance: client scenarios required by $spec"
  rm -rf "$dir/results/$spec"
  node "$dir/node_modules/.bin/conformance" client --command "$root/$dir/adapter" \
    --requirements "$spec" -o "$dir/results/$spec" > "$dir/results-$spec.txt" 2>&1 || status=1
  # The summary: each scenario's line and the totals, not every check.
  sed -n '/=== SUITE SUMMARY ===/,$p' "$dir/results-$spec.txt"
done
exit $status
