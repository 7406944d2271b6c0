#!/bin/sh
# The mnist program's bad-input paths: a clear message and a non-zero exit, never a crash.
# usage: cli_errors.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_error() { # expect_error <what> <text in message> <args...>
  what=$1 text=$2
  shift 2
  "$mnist" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$what: exit code $rc, expected 1; stderr: $(cat "$tmp/err")"
  grep -q -- "$text" "$tmp/err" || fail "$what: stderr lacks '$text': $(cat "$tmp/err")"
  echo "ok: $what: $(head -c 200 "$tmp/err")"
}

expect_error "missing data directory" "dataset-fashion-mnist" --data-dir "$tmp/nowhere"

mkdir "$tmp/corrupt"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  cp "/usr/share/datasets/fashion-mnist/$f.gz" "$tmp/corrupt/"
done
# Cut the training images short: the IDX reader must notice.
gzip -dc "$tmp/corrupt/train-images-idx3-ubyte.gz" | head -c 100000 | gzip >"$tmp/corrupt/t.gz"
mv "$tmp/corrupt/t.gz" "$tmp/corrupt/train-images-idx3-ubyte.gz"
expect_error "truncated image file" "train-images-idx3-ubyte" --data-dir "$tmp/corrupt"

printf 'not a checkpoint' >"$tmp/bad.safetensors"
expect_error "corrupt checkpoint" "bad.safetensors" --limit 16 --test-limit 16 --epochs 0 --load "$tmp/bad.safetensors"

expect_error "zero replicas" "--replicas: expected at least 1 replica, got 0" --replicas 0
expect_error "negative replicas" "--replicas: expected at least 1 replica, got -2" --replicas -2
expect_error "training set too small for the replicas" \
  "the training set has 10 images, fewer than one run takes: 4 replica(s) x 4 images" \
  --replicas 4 --batch-size 4 --limit 10 --test-limit 16

# The startup output names the replica count.
"$mnist" --replicas 2 --batch-size 4 --limit 16 --test-limit 16 >"$tmp/out" 2>"$tmp/err" ||
  fail "--replicas 2: exit code $?; stderr: $(cat "$tmp/err")"
grep -q "2 replica(s); batch 4 per replica (8 in all" "$tmp/out" ||
  fail "--replicas 2: the startup output does not name the replicas: $(cat "$tmp/out")"
echo "ok: --replicas 2 named at startup"

expect_error "unwritable --report directory" "--report: cannot create the directory '/dev/null/reports'" \
  --report /dev/null/reports --limit 16 --test-limit 16
expect_error "unknown model" "--model: expected mlp or cnn, got 'resnet'" --model resnet
expect_error "too many pipeline stages for the CNN" \
  "--pipeline-stages: expected 1 to 4 (the CNN has 4 units: 2 blocks, 2 dense layers), got 5" \
  --model cnn --pipeline-stages 5
expect_error "unknown optimizer" "--optimizer: expected sgd or adam, got 'lamb'" --optimizer lamb
expect_error "offloading SGD" "SGD has no optimizer state to offload" --offload-optimizer-state
expect_error "sharding SGD" "SGD has no optimizer state to shard" --shard-optimizer-state \
  --replicas 2
expect_error "sharding over one replica" \
  "--shard-optimizer-state: needs --replicas of at least 2 to shard the state over, got 1" \
  --optimizer adam --shard-optimizer-state
expect_error "unknown --dtype" "--dtype: expected float32 or float16, got 'bfloat16'" --dtype bfloat16
expect_error "integer --dtype" "--dtype: expected float32 or float16, got 'int32'" --dtype int32
expect_error "stochastic rounding in float32" \
  "--stochastic-rounding: rounds float16 weights' updates and needs --dtype float16, got --dtype float32" \
  --stochastic-rounding
expect_error "an unknown matmul partials type" \
  "--matmul-partials-type: expected float32 or float16, got 'half'" --matmul-partials-type half
expect_error "float16 partials in float32" \
  "--matmul-partials-type: float16 partials accumulate float16 products and need --dtype float16, got --dtype float32" \
  --matmul-partials-type float16
expect_error "a memory proportion of 0" \
  "--available-memory-proportion: expected a value in (0, 1], got 0" --available-memory-proportion 0
expect_error "a memory proportion above 1" \
  "--available-memory-proportion: expected a value in (0, 1], got 1.5" --available-memory-proportion 1.5
expect_error "a memory proportion that is not a number" "--available-memory-proportion" \
  --available-memory-proportion lots
expect_error "too many pipeline stages" "--pipeline-stages: expected 1 to 4 (the Net has 4 layers), got 5" \
  --pipeline-stages 5
expect_error "no pipeline stages" "--pipeline-stages: expected 1 to 4 (the Net has 4 layers), got 0" \
  --pipeline-stages 0
expect_error "too few micro-batches for the pipeline" \
  "--pipeline-stages 3: the pipeline has 5 stages (backward ones included) and its grouped schedule needs --gradient-accumulation of at least 5 micro-batches to fill them, got 4" \
  --pipeline-stages 3 --gradient-accumulation 4
expect_error "an unknown pipeline schedule" \
  "--pipeline-schedule: expected grouped, interleaved or sequential, got 'staggered'" \
  --pipeline-stages 2 --gradient-accumulation 4 --pipeline-schedule staggered
expect_error "a pipeline schedule without a pipeline" \
  "--pipeline-schedule: schedules pipeline stages and needs --pipeline-stages 2 or more, got --pipeline-stages 1" \
  --pipeline-schedule sequential
expect_error "a device mapping without a pipeline" \
  "--device-mapping: places pipeline stages on IPUs and needs --pipeline-stages 2 or more" \
  --device-mapping 0
expect_error "a device mapping of the wrong length" \
  "--device-mapping: expected an IPU for each of the 3 stages, got 2 IPUs" \
  --pipeline-stages 3 --gradient-accumulation 5 --device-mapping 0,0
expect_error "a device mapping beyond the stages' IPUs" \
  "--device-mapping: expected IPUs 0 to 1, got IPU -1 for stage 0" \
  --pipeline-stages 2 --gradient-accumulation 3 --device-mapping=-1,0
expect_error "a device mapping that is not numbers" "device-mapping" \
  --pipeline-stages 2 --gradient-accumulation 3 --device-mapping 0,x
expect_error "recompute without a pipeline" \
  "--recompute: recomputes each pipeline stage's activations and needs --pipeline-stages 2 or more, got --pipeline-stages 1" \
  --recompute
# Flags CLI11 checks: the value's need named, and exit code 1 like every other error (CLI11's
# own codes are 105-109).
expect_error "--batch-size 0" "--batch-size: expected a positive number, got 0" --batch-size 0
expect_error "--epochs -1" "--epochs: expected 0 or more, got -1" --epochs -1
expect_error "--learning-rate abc" "--learning-rate: expected a number, got 'abc'" \
  --learning-rate abc
expect_error "--steps-per-execution 1.5" "Could not convert: --steps-per-execution = 1.5" \
  --steps-per-execution 1.5
expect_error "an unknown flag" "The following argument was not expected: --bogus" --bogus
"$mnist" --help >/dev/null || fail "--help: exit code $?, expected 0"
echo "ok: --help exits 0"
expect_error "--target without --estimate-only" \
  "--target: only --estimate-only estimates for a target" --target bow
expect_error "unknown --target" "no IPU target named 'tpu': expected ipu2, bow, ipu21 or popart_ipu_model" \
  --estimate-only --target tpu
expect_error "--estimate-only with --report" \
  "--estimate-only: trains nothing, so --report has nothing to work on" --estimate-only \
  --report "$tmp/report"
expect_error "--estimate-only with --profile" \
  "--estimate-only: trains nothing, so --profile has nothing to work on" --estimate-only --profile
expect_error "--estimate-only with --save" \
  "--estimate-only: trains nothing, so --save has nothing to work on" --estimate-only \
  --save "$tmp/w.safetensors"
