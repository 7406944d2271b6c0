#!/bin/sh
# The main job's --optimizer and --offload-optimizer-state: Adam with its state in Streaming
# Memory trains bitwise as with it on the IPU (the saved weights are equal), one step per
# run and in a device loop with gradient accumulation and replicas; the run prints the
# on-chip memory with and without. (Bad values: cli_errors.sh.)
# usage: optimizer.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

compare() { # compare NAME ARGS...: Adam's state on the IPU against Streaming Memory
  name=$1
  shift
  "$mnist" --optimizer adam "$@" --save "$tmp/on_chip.safetensors" >"$tmp/on_chip" 2>&1 ||
    fail "$name: on chip: $(cat "$tmp/on_chip")"
  "$mnist" --optimizer adam --offload-optimizer-state "$@" --save "$tmp/offloaded.safetensors" \
    >"$tmp/offloaded" 2>&1 || fail "$name: offloaded: $(cat "$tmp/offloaded")"
  cmp -s "$tmp/on_chip.safetensors" "$tmp/offloaded.safetensors" ||
    fail "$name: the weights differ between on-chip and offloaded optimizer state"
  [ "$(grep '^test accuracy' "$tmp/on_chip")" = "$(grep '^test accuracy' "$tmp/offloaded")" ] ||
    fail "$name: the accuracies differ"
  grep -q "Adam at learning rate 0.001" "$tmp/offloaded" || fail "$name: no optimizer line"
  grep -q "^On-chip always-live memory: .* MiB with the optimizer state in Streaming Memory (.* MiB there), .* MiB with it on the IPU$" \
    "$tmp/offloaded" || fail "$name: no memory line: $(cat "$tmp/offloaded")"
  echo "ok: $name: $(grep '^On-chip' "$tmp/offloaded")"
}

small="--limit 512 --test-limit 100 --workers 1"
# shellcheck disable=SC2086
compare "one step per run" $small
# shellcheck disable=SC2086
compare "device loop, accumulation, replicas" $small --steps-per-execution 4 \
  --gradient-accumulation 2 --replicas 2 --batch-size 4
