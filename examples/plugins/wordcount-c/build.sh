#!/bin/sh
# Builds plugin.wasm with clang and Debian's wasi-libc (apt-get install
# clang lld wasi-libc libclang-rt-14-dev-wasm32).
set -eu
cd "$(dirname "$0")"
${CC:-clang} --target=wasm32-wasi -O2 -Wall -o plugin.wasm main.c json.c
