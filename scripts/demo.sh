#!/usr/bin/env bash
# The demo: install each wordcount example in a scratch HOME and drive it
# through the real bingo binary, exactly as a person would.
set -euo pipefail
bingo=$1
demo=$2
examples=$(cd "$(dirname "$0")/../examples/plugins" && pwd)

rm -rf "$demo"
mkdir -p "$demo/work"
cd "$demo/work"
printf 'the quick brown fox\njumps over the lazy dog\n' > notes.txt
printf 'a second file\n' > notebook.md

run() { echo "\$ bingo $*"; "$bingo" "$@" || echo "(exit status $?)"; echo; }

for example in wordcount wordcount-wasm; do
  export HOME=$demo/home-$example
  tool="plugin__${example}__count"
  mkdir -p "$HOME/.bingo/plugins"
  cp -r "$examples/$example" "$HOME/.bingo/plugins/$example"
  echo "==== $example, installed as ~/.bingo/plugins/$example"
  run plugins
  run "/wordcount notes.txt"
  run --print "/wordcount notes.txt"
  run complete "/wordcount no"
  run call "$tool" '{"path":"notes.txt"}'
  run call --allow "$tool" "$tool" '{"path":"notes.txt"}'
  echo "---- a turn, with the scripted model plugin as the provider"
  cp -r "$examples/scripted-model" "$HOME/.bingo/plugins/scripted-model"
  echo '{"provider": {"plugin": "scripted-model/model"}, "permissions": {"allow": ["'"$tool"'"]}}' > "$HOME/.bingo/settings.json"
  run "how many words are in notes.txt?"
  run --print "how many words are in notes.txt?"
  echo "\$ tail -n 2 ~/.bingo/data/logs/plugin-$example.log"
  tail -n 2 "$HOME/.bingo/data/logs/plugin-$example.log"
  echo
done

# An MCP server (examples/plugins/wordcount-mcp, built with the official
# go-sdk) as a plugin, native and compiled to WASI: the same manifest rules,
# gate and deadlines as any plugin, and the wasm one sandboxed.
for example in wordcount-mcp wordcount-mcp-wasm; do
  export HOME=$demo/home-$example
  mkdir -p "$HOME/.bingo/plugins"
  cp -r "$examples/$example" "$HOME/.bingo/plugins/$example"
  echo "==== $example (an MCP server), installed as ~/.bingo/plugins/$example"
  run plugins
  run call --allow "plugin__${example}__count" "plugin__${example}__count" '{"text":"the quick brown fox"}'
  run complete "/summarize b"
done
