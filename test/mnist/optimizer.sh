#!/bin/sh
# The main job's --optimizer, --offload-optimizer-state and --shard-optimizer-state: Adam with
# its state in Streaming Memory, sharded over the replicas, or both, trains bitwise as with it
# whole on the IPU (the saved weights are equal), one step per run and in a device loop with
# gradient accumulation and replicas; the run prints the on-chip memory with and without.
# (Bad values: cli_errors.sh.)
# usage: optimizer.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

compare() { # compare NAME FLAGS ARGS...: Adam's state whole on the IPU against FLAGS
  name=$1
  flags=$2
  shift 2
  "$mnist" --optimizer adam "$@" --save "$tmp/on_chip.safetensors" >"$tmp/on_chip" 2>&1 ||
    fail "$name: on chip: $(cat "$tmp/on_chip")"
  # shellcheck disable=SC2086
  "$mnist" --optimizer adam $flags "$@" --save "$tmp/offloaded.safetensors" \
    >"$tmp/offloaded" 2>&1 || fail "$name: $flags: $(cat "$tmp/offloaded")"
  cmp -s "$tmp/on_chip.safetensors" "$tmp/offloaded.safetensors" ||
    fail "$name: the weights differ between on-chip and offloaded optimizer state"
  [ "$(grep '^test accuracy' "$tmp/on_chip")" = "$(grep '^test accuracy' "$tmp/offloaded")" ] ||
    fail "$name: the accuracies differ"
  grep -q "Adam at learning rate 0.001" "$tmp/offloaded" || fail "$name: no optimizer line"
  grep -q "^On-chip always-live memory: .* MiB with the optimizer state" "$tmp/offloaded" ||
    fail "$name: no memory line: $(cat "$tmp/offloaded")"
  echo "ok: $name: $(grep '^On-chip' "$tmp/offloaded")"
}

small="--limit 512 --test-limit 100 --workers 1"
loop="--steps-per-execution 4 --gradient-accumulation 2 --replicas 2 --batch-size 4"
# shellcheck disable=SC2086
compare "offloaded, one step per run" --offload-optimizer-state $small
# shellcheck disable=SC2086
compare "offloaded, device loop, accumulation, replicas" --offload-optimizer-state $small $loop
# shellcheck disable=SC2086
compare "sharded, one step per run" --shard-optimizer-state $small --replicas 2 --batch-size 8
# shellcheck disable=SC2086
compare "sharded and offloaded, device loop" "--shard-optimizer-state --offload-optimizer-state" \
  $small $loop
