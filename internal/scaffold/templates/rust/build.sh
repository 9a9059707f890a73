#!/bin/sh
# Builds plugin.wasm with Debian's Rust (apt-get install rustc cargo
# libstd-rust-dev-wasm32 librust-serde-json-dev), offline: serde_json comes
# from Debian's crate directory, /usr/share/cargo/registry. Debian's cargo
# is named by its path, since a rustup one earlier on PATH may lack the
# WASI target; CARGO and RUSTC name others.
set -eu
cd "$(dirname "$0")"
CARGO=${CARGO:-/usr/bin/cargo}
RUSTC=${RUSTC:-/usr/bin/rustc}
export RUSTC
# WASI preview 1 is wasm32-wasip1 from Rust 1.78 on, and wasm32-wasi, the
# only name before it (Debian's), is gone from Rust 1.84: take whichever
# this rustc has.
TARGET=wasm32-wasip1
"$RUSTC" --print target-list | grep -qx "$TARGET" || TARGET=wasm32-wasi
"$CARGO" build --offline --release --target "$TARGET" \
  --config 'source.crates-io.replace-with="debian"' \
  --config 'source.debian.directory="/usr/share/cargo/registry"'
cp "target/$TARGET/release/{{.Name}}.wasm" plugin.wasm
