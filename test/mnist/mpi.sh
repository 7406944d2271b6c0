#!/usr/bin/env bash
# The main job under mpirun: 2 instances x 2 replicas train exactly as one process with 4
# replicas (the saved weights are bitwise equal, the test accuracy the same), with a device
# loop and gradient accumulation too; only instance 0 prints; a --replicas that the instances
# do not divide is a clear error that ends both with exit code 1.
# usage: mpi.sh path/to/mnist path/to/mpirun.sh
set -u
mnist=$1
launch=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

compare() { # compare NAME ARGS...: one process against two instances
  local name=$1
  shift
  "$mnist" "$@" --save "$tmp/one.safetensors" >"$tmp/one" 2>&1 ||
    fail "$name: one process: $(cat "$tmp/one")"
  bash "$launch" 2 240 "$mnist" "$@" --save "$tmp/two.safetensors" >"$tmp/two" 2>&1 ||
    fail "$name: mpirun -np 2: $(cat "$tmp/two")"
  cmp -s "$tmp/one.safetensors" "$tmp/two.safetensors" ||
    fail "$name: the weights differ between one process and two instances"
  [ "$(grep -c '^test accuracy' "$tmp/two")" -eq 1 ] ||
    fail "$name: not exactly one test accuracy line: $(cat "$tmp/two")"
  [ "$(grep '^test accuracy' "$tmp/one")" = "$(grep '^test accuracy' "$tmp/two")" ] ||
    fail "$name: the accuracies differ"
  grep -q "^Emulator: .* replica(s) over 2 instances" "$tmp/two" ||
    fail "$name: no instance line: $(cat "$tmp/two")"
  grep -q "^MPI: instance 0 sent [0-9.]* messages and [0-9]* bytes per step" "$tmp/two" ||
    fail "$name: no traffic line"
  [ "$(grep -c '^Fashion-MNIST' "$tmp/two")" -eq 1 ] || fail "$name: instance 1 printed too"
  echo "ok: $name: $(grep '^test accuracy' "$tmp/two")"
}

small="--batch-size 4 --limit 1024 --test-limit 200 --workers 1"
# shellcheck disable=SC2086
compare "one step per run" --replicas 4 $small
# shellcheck disable=SC2086
compare "one replica per instance" --replicas 2 $small
# shellcheck disable=SC2086
compare "device loop, accumulation" --replicas 4 $small --steps-per-execution 4 \
  --gradient-accumulation 2

bash "$launch" 2 60 "$mnist" --replicas 3 --limit 100 >"$tmp/bad" 2>&1 &&
  fail "--replicas 3 over 2 instances was accepted"
grep -q "cannot be shared evenly by the 2 instances" "$tmp/bad" ||
  fail "--replicas 3: no clear error: $(cat "$tmp/bad")"
echo "ok: --replicas 3 over 2 instances is an error"
