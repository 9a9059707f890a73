#!/bin/sh
# Builds plugin.wasm with Debian's Rust (apt-get install rustc cargo
# libstd-rust-dev-wasm32 librust-serde-json-dev), offline: serde_json comes
# from Debian's crate directory, /usr/share/cargo/registry. Debian's cargo
# is named by its path, since a rustup one earlier on PATH may lack the
# wasm32-wasi target.
set -eu
cd "$(dirname "$0")"
CARGO=${CARGO:-/usr/bin/cargo}
RUSTC=${RUSTC:-/usr/bin/rustc}
export RUSTC
"$CARGO" build --offline --release --target wasm32-wasi \
  --config 'source.crates-io.replace-with="debian"' \
  --config 'source.debian.directory="/usr/share/cargo/registry"'
cp "target/wasm32-wasi/release/{{.Name}}.wasm" plugin.wasm
