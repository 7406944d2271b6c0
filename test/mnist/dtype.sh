#!/bin/sh
# mnist --dtype float16 trains, with and without --stochastic-rounding and float16 matmul
# partials: a short run in mixed
# precision says so at startup, its loss over one epoch of 2000 images falls below the
# untrained ln(10) = 2.30, and it classifies far better than chance.
# usage: dtype.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# trains LABEL STARTUP_PATTERN FLAGS...: one short run with FLAGS, its startup line matching
# STARTUP_PATTERN (grep), its loss and accuracy as above.
trains() {
  label=$1 startup=$2
  shift 2
  "$mnist" "$@" --limit 2000 --test-limit 1000 >"$tmp/out" 2>"$tmp/err" ||
    fail "$label: exit code $?; stderr: $(cat "$tmp/err")"
  cat "$tmp/out"
  grep -q "$startup" "$tmp/out" || fail "$label: the startup output does not say '$startup'"
  loss=$(sed -n 's/^epoch 1: mean loss \([0-9.]*\) .*/\1/p' "$tmp/out")
  accuracy=$(sed -n 's/^test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/out")
  [ -n "$loss" ] && [ -n "$accuracy" ] || fail "$label: no loss or accuracy in the output"
  awk -v l="$loss" 'BEGIN { exit !(l < 2.0) }' || fail "$label: mean loss $loss, expected < 2.0"
  awk -v a="$accuracy" 'BEGIN { exit !(a > 40) }' ||
    fail "$label: test accuracy $accuracy%, expected > 40% (chance: 10%)"
  echo "ok: $label trains: mean loss $loss, test accuracy $accuracy%"
}

trains "--dtype float16" "float16 (float32 loss, loss scaling" --dtype float16
trains "--dtype float16 --stochastic-rounding" "loss scaling [0-9.]*, stochastic rounding)" \
  --dtype float16 --stochastic-rounding
trains "--dtype float16 --matmul-partials-type float16" "loss scaling [0-9.]*, float16 matmul partials)" \
  --dtype float16 --matmul-partials-type float16

# --available-memory-proportion changes the estimated plans, never the results: the CNN in
# float16 saves the same bytes with and without it.
"$mnist" --model cnn --dtype float16 --limit 64 --test-limit 16 --save "$tmp/default.safetensors" \
  >"$tmp/out" 2>&1 || fail "cnn: $(cat "$tmp/out")"
"$mnist" --model cnn --dtype float16 --limit 64 --test-limit 16 --available-memory-proportion 0.05 \
  --save "$tmp/tight.safetensors" >"$tmp/out" 2>&1 || fail "cnn, proportion 0.05: $(cat "$tmp/out")"
cmp -s "$tmp/default.safetensors" "$tmp/tight.safetensors" ||
  fail "--available-memory-proportion 0.05 changed the trained weights"
echo "ok: --available-memory-proportion 0.05 trains the CNN bitwise as the default"
