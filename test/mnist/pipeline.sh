#!/bin/sh
# The main job's --pipeline-stages: the Net pipelined over 2 and 4 IPUs, or in 4 stages on one,
# trains bitwise as the same gradient accumulation on one IPU (the saved weights and the test
# accuracy are equal), with SGD and Adam, replicas, a device loop, float16 and recomputation;
# the run names the stages and shows the variables split over the IPUs. (Bad values:
# cli_errors.sh.)
# usage: pipeline.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

compare() { # compare NAME STAGES ARGS...: one IPU against a pipeline of STAGES
  name=$1
  stages=$2
  shift 2
  "$mnist" "$@" --save "$tmp/one.safetensors" >"$tmp/one" 2>&1 || fail "$name: one IPU: $(cat "$tmp/one")"
  "$mnist" --pipeline-stages "$stages" "$@" --save "$tmp/piped.safetensors" >"$tmp/piped" 2>&1 ||
    fail "$name: pipelined: $(cat "$tmp/piped")"
  cmp -s "$tmp/one.safetensors" "$tmp/piped.safetensors" ||
    fail "$name: the weights differ between one IPU and the pipeline"
  [ "$(grep '^test accuracy' "$tmp/one")" = "$(grep '^test accuracy' "$tmp/piped")" ] ||
    fail "$name: the accuracies differ"
  grep -q "^Pipeline: the Net over $stages IPUs in $((2 * stages - 1)) stages" "$tmp/piped" ||
    fail "$name: no pipeline line: $(cat "$tmp/piped")"
  # Every IPU holds some of the variables.
  line=$(grep "^Variables per IPU:" "$tmp/piped") || fail "$name: no variables line"
  i=0
  while [ "$i" -lt "$stages" ]; do
    echo "$line" | grep -q "IPU $i [1-9]" || echo "$line" | grep -q "IPU $i 0\.0*[1-9]" ||
      fail "$name: IPU $i holds no variables: $line"
    i=$((i + 1))
  done
  echo "ok: $name: $(grep '^test accuracy' "$tmp/piped"); $line"
}

small="--limit 1024 --test-limit 200 --workers 2"
# shellcheck disable=SC2086
compare "2 stages, SGD" 2 $small --gradient-accumulation 4
# shellcheck disable=SC2086
compare "4 stages, Adam" 4 $small --gradient-accumulation 8 --optimizer adam
# shellcheck disable=SC2086
compare "2 stages, replicas, device loop, float16" 2 $small --gradient-accumulation 3 \
  --replicas 2 --batch-size 4 --steps-per-execution 2 --dtype float16

# --recompute: each stage's activations recomputed from its inputs, bitwise the same training.
# shellcheck disable=SC2086
"$mnist" --pipeline-stages 4 $small --gradient-accumulation 8 --save "$tmp/kept.safetensors" \
  >"$tmp/kept" 2>&1 || fail "recompute: kept: $(cat "$tmp/kept")"
# shellcheck disable=SC2086
"$mnist" --pipeline-stages 4 --recompute $small --gradient-accumulation 8 \
  --save "$tmp/recomputed.safetensors" >"$tmp/recomputed" 2>&1 ||
  fail "recompute: $(cat "$tmp/recomputed")"
cmp -s "$tmp/kept.safetensors" "$tmp/recomputed.safetensors" ||
  fail "recompute: the weights differ from the run that keeps the activations"
echo "ok: 4 stages, --recompute: $(grep '^test accuracy' "$tmp/recomputed")"

# Four stages on one IPU, scheduled one micro-batch at a time and recomputed from each stage's
# input (TF's device mapping of zeros: recomputation checkpoints): the unpipelined training.
# shellcheck disable=SC2086
"$mnist" $small --gradient-accumulation 2 --save "$tmp/plain.safetensors" >"$tmp/plain" 2>&1 ||
  fail "checkpoints: unpipelined: $(cat "$tmp/plain")"
# shellcheck disable=SC2086
"$mnist" --pipeline-stages 4 --device-mapping 0,0,0,0 --pipeline-schedule sequential --recompute \
  $small --gradient-accumulation 2 --save "$tmp/checkpointed.safetensors" >"$tmp/checkpointed" 2>&1 ||
  fail "checkpoints: $(cat "$tmp/checkpointed")"
cmp -s "$tmp/plain.safetensors" "$tmp/checkpointed.safetensors" ||
  fail "checkpoints: the weights differ from the unpipelined run"
grep -q "^Pipeline: the Net over 1 IPU in 7 stages (IPUs 0 0 0 0 0 0 0), sequential schedule, recomputing" \
  "$tmp/checkpointed" || fail "checkpoints: no pipeline line: $(cat "$tmp/checkpointed")"
echo "ok: 4 stages on one IPU, sequential, --recompute: $(grep '^test accuracy' "$tmp/checkpointed")"
