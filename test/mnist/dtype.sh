#!/bin/sh
# mnist --dtype float16 trains (with and without --stochastic-rounding): a short run in mixed
# precision says so at startup, its loss over one epoch of 2000 images falls below the
# untrained ln(10) = 2.30, and it classifies far better than chance.
# usage: dtype.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$mnist" --dtype float16 --limit 2000 --test-limit 1000 >"$tmp/out" 2>"$tmp/err" ||
  fail "--dtype float16: exit code $?; stderr: $(cat "$tmp/err")"
cat "$tmp/out"
grep -q "float16 (float32 loss, loss scaling" "$tmp/out" ||
  fail "--dtype float16: the startup output does not name the dtype"
loss=$(sed -n 's/^epoch 1: mean loss \([0-9.]*\) .*/\1/p' "$tmp/out")
accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/out")
[ -n "$loss" ] && [ -n "$accuracy" ] || fail "--dtype float16: no loss or accuracy in the output"
awk -v l="$loss" 'BEGIN { exit !(l < 2.0) }' || fail "--dtype float16: mean loss $loss, expected < 2.0"
awk -v a="$accuracy" 'BEGIN { exit !(a > 40) }' ||
  fail "--dtype float16: test accuracy $accuracy%, expected > 40% (chance: 10%)"
echo "ok: --dtype float16 trains: mean loss $loss, test accuracy $accuracy%"

# With stochastic rounding the float16 updates round stochastically: it trains as well, and
# says so.
"$mnist" --dtype float16 --stochastic-rounding --limit 2000 --test-limit 1000 >"$tmp/out" \
  2>"$tmp/err" || fail "--stochastic-rounding: exit code $?; stderr: $(cat "$tmp/err")"
cat "$tmp/out"
grep -q "loss scaling [0-9.]*, stochastic rounding)" "$tmp/out" ||
  fail "--stochastic-rounding: the startup output does not say so"
loss=$(sed -n 's/^epoch 1: mean loss \([0-9.]*\) .*/\1/p' "$tmp/out")
accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/out")
[ -n "$loss" ] && [ -n "$accuracy" ] || fail "--stochastic-rounding: no loss or accuracy"
awk -v l="$loss" 'BEGIN { exit !(l < 2.0) }' || fail "--stochastic-rounding: mean loss $loss"
awk -v a="$accuracy" 'BEGIN { exit !(a > 40) }' ||
  fail "--stochastic-rounding: test accuracy $accuracy%, expected > 40%"
echo "ok: --dtype float16 --stochastic-rounding trains: mean loss $loss, test accuracy $accuracy%"
