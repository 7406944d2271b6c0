#!/bin/sh
# mnist --model cnn: the CNN trains (its loss falls, it classifies far better than chance) at
# its own defaults (Adam, batch 32), and each flag keeps its promise with it: a device loop,
# a pipeline over its blocks and Adam's state offloaded or sharded train bitwise as the
# simpler runs, 2 replicas of batch 16 (the
# batch norms synchronized) as 1 of batch 32 to rounding, float16 trains, saved weights and
# running statistics load back to the same test accuracy, and the profile, trace, memory
# report and report directories are written. (Bad values: cli_errors.sh.)
# usage: cnn.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

small="--model cnn --limit 1024 --test-limit 200 --workers 2"
run() { # run NAME ARGS...: the main job, its output in $tmp/NAME
  name=$1
  shift
  "$mnist" "$@" >"$tmp/$name" 2>&1 || fail "$name: exit code $?: $(cat "$tmp/$name")"
}
accuracy() { sed -n 's/^test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/$1"; }

# shellcheck disable=SC2086
run base $small --save "$tmp/base.safetensors"
grep -q "Adam at learning rate 0.001" "$tmp/base" && grep -q "batch 32" "$tmp/base" ||
  fail "the CNN's defaults (Adam 0.001, batch 32) are not what ran: $(head -5 "$tmp/base")"
loss=$(sed -n 's/^epoch 1: mean loss \([0-9.]*\) .*/\1/p' "$tmp/base")
awk -v l="$loss" 'BEGIN { exit !(l < 1.5) }' || fail "mean loss $loss, expected < 1.5"
awk -v a="$(accuracy base)" 'BEGIN { exit !(a > 50) }' ||
  fail "test accuracy $(accuracy base)%, expected > 50% (chance: 10%)"
echo "ok: the CNN trains: mean loss $loss, $(grep '^test accuracy' "$tmp/base")"

# The weights and running statistics load back: the same test accuracy without training.
# shellcheck disable=SC2086
run loaded $small --epochs 0 --load "$tmp/base.safetensors"
[ "$(accuracy loaded)" = "$(accuracy base)" ] ||
  fail "loaded weights score $(accuracy loaded)%, trained ones $(accuracy base)%"
echo "ok: --save and --load keep the weights and the running statistics"

# shellcheck disable=SC2086
run loop $small --steps-per-execution 8 --save "$tmp/loop.safetensors"
cmp -s "$tmp/base.safetensors" "$tmp/loop.safetensors" ||
  fail "a device loop of 8 steps trains other weights than one step per run"
echo "ok: --steps-per-execution 8 trains bitwise as 1"

# shellcheck disable=SC2086
run accumulated $small --batch-size 4 --gradient-accumulation 8 --save "$tmp/acc.safetensors"
# shellcheck disable=SC2086
run piped $small --batch-size 4 --gradient-accumulation 8 --pipeline-stages 4 \
  --save "$tmp/piped.safetensors"
cmp -s "$tmp/acc.safetensors" "$tmp/piped.safetensors" ||
  fail "the CNN pipelined over 4 IPUs trains other weights than on one"
grep -q "^Pipeline: the CNN over 4 IPUs in 7 stages" "$tmp/piped" ||
  fail "no pipeline line: $(cat "$tmp/piped")"
echo "ok: --pipeline-stages 4 trains bitwise as one IPU; $(grep '^Variables per IPU' "$tmp/piped")"

# Adam's state in Streaming Memory, or sharded over 2 replicas: training is bitwise the same.
# shellcheck disable=SC2086
run offloaded $small --offload-optimizer-state --save "$tmp/offloaded.safetensors"
cmp -s "$tmp/base.safetensors" "$tmp/offloaded.safetensors" ||
  fail "--offload-optimizer-state trains other weights"
# shellcheck disable=SC2086
run two $small --replicas 2 --batch-size 16 --save "$tmp/two.safetensors"
# shellcheck disable=SC2086
run sharded $small --replicas 2 --batch-size 16 --shard-optimizer-state \
  --save "$tmp/sharded.safetensors"
cmp -s "$tmp/two.safetensors" "$tmp/sharded.safetensors" ||
  fail "--shard-optimizer-state trains other weights than 2 replicas with all of the state"
echo "ok: --offload-optimizer-state and --shard-optimizer-state train bitwise the same"

cp "$tmp/two" "$tmp/replicated"
awk -v a="$(accuracy replicated)" -v b="$(accuracy base)" \
  'BEGIN { d = a - b; exit !(d < 1.5 && d > -1.5) }' ||
  fail "2 replicas of 16 score $(accuracy replicated)%, 1 of 32 $(accuracy base)%"
echo "ok: 2 replicas of batch 16 score $(accuracy replicated)%, 1 of 32 $(accuracy base)%"

# shellcheck disable=SC2086
run half $small --dtype float16
awk -v a="$(accuracy half)" 'BEGIN { exit !(a > 50) }' ||
  fail "--dtype float16: test accuracy $(accuracy half)%"
echo "ok: --dtype float16: $(grep '^test accuracy' "$tmp/half")"

run profiled --model cnn --limit 256 --test-limit 100 --workers 2 --profile --trace "$tmp/trace.json" \
  --memory-report "$tmp/memory.json" --report "$tmp/reports"
grep -q "Conv" "$tmp/trace.json" || fail "the trace has no convolution"
grep -q '"ipus"' "$tmp/memory.json" || fail "the memory report has no IPUs"
sh "$(dirname "$0")/report_check.sh" "$tmp/reports" || fail "--report with the CNN"
grep -q "Conv" "$tmp/reports/train/trace.json" || fail "--report: the trace has no convolution"
echo "ok: --profile, --trace, --memory-report and --report with the CNN"
