#!/usr/bin/env bash
# An instance that stops early ends the whole run with a clear error, within the 3 s timeout
# the program sets (plus MPI's start and teardown), never a hang.
set -uo pipefail
here=$(dirname "$0")
start=$SECONDS
out=$(bash "$here/mpirun.sh" 2 60 "$1" 2>&1)
status=$?
elapsed=$((SECONDS - start))
echo "$out"
echo "exit status $status after $elapsed s"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "FAIL: expected a non-zero exit before the 60 s guard"; exit 1; }
grep -q "waited 3 s for the other instances" <<<"$out" || { echo "FAIL: no message naming the wait"; exit 1; }
grep -q "the run returned" <<<"$out" && { echo "FAIL: the run returned"; exit 1; }
[ "$elapsed" -lt 40 ] || { echo "FAIL: took $elapsed s"; exit 1; }
echo "ok"
