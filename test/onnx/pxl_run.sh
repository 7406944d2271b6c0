#!/bin/sh
# pxl-run on models PyTorch exported: the outputs it writes are PyTorch's (to 1e-4, checked by
# npy_close), on replicas too; every bad input is a message and exit 1.
# usage: pxl_run.sh path/to/pxl-run path/to/test/onnx/models path/to/npy_close
set -u
run=$1 models=$2 npy_close=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# compare <name> <file>: the written output against PyTorch's, through pxl's
# npy reader (no Python here).
compare() {
  "$npy_close" "$2" "$models/$1.output.npy" || fail "$1: $2 differs from PyTorch's output"
}

"$run" "$models/cnn.onnx" --input "input=$models/cnn.input.npy" --output "output=$tmp/cnn.npy" \
  >"$tmp/out" || fail "cnn: exit code $?"
grep -q "output: shape (2, 10), dtype float32" "$tmp/out" || fail "cnn: printed $(cat "$tmp/out")"
compare cnn "$tmp/cnn.npy"
echo "ok: cnn"

"$run" "$models/fashion_cnn.onnx" --input "input=$models/fashion_cnn.input.npy" --replicas 2 \
  --workers 2 --output "output=$tmp/f.npy" --profile --trace "$tmp/trace.json" \
  --memory-report "$tmp/memory.json" >"$tmp/out" || fail "fashion_cnn on 2 replicas: exit code $?"
compare fashion_cnn "$tmp/f.npy"
grep -q "Estimated device time" "$tmp/out" || fail "--profile printed no estimate"
[ -s "$tmp/trace.json" ] && [ -s "$tmp/memory.json" ] || fail "--trace or --memory-report wrote nothing"
echo "ok: fashion_cnn on 2 replicas, with --profile, --trace and --memory-report"

"$run" "$models/encoder.onnx" --input "input=$models/encoder.input.npy" --dtype float16 \
  --output "output=$tmp/e.npy" >"$tmp/out" || fail "encoder in float16: exit code $?"
grep -q "dtype float16" "$tmp/out" || fail "encoder in float16: printed $(cat "$tmp/out")"
echo "ok: encoder in float16"

# PyTorch's int64 token ids, downcast to the model's int32 as PopXL's downcast_inputs does.
"$run" "$models/encoder.onnx" --input "input=$models/encoder.input_int64.npy" \
  --output "output=$tmp/e64.npy" >"$tmp/out" || fail "encoder on int64 ids: exit code $?"
compare encoder "$tmp/e64.npy"
echo "ok: encoder on int64 token ids"

# --report DIR: autoReport's files and the page.
"$run" "$models/cnn.onnx" --input "input=$models/cnn.input.npy" --report "$tmp/report" \
  >"$tmp/out" || fail "cnn --report: exit code $?"
for f in memory.json trace.json profile.json report.html; do
  [ -s "$tmp/report/$f" ] || fail "--report wrote no $f: $(ls "$tmp/report" 2>&1)"
done
echo "ok: --report"

# --estimate-only: no run, no input file needed where the model fixes the shapes.
"$run" "$models/cnn.onnx" --estimate-only --target bow --memory-report "$tmp/est.json" \
  >"$tmp/out" || fail "cnn --estimate-only: exit code $?"
grep -q "Estimate on target 'bow'" "$tmp/out" || fail "--estimate-only printed $(cat "$tmp/out")"
grep -q "estimated device time of one run" "$tmp/out" || fail "--estimate-only: no time"
[ -s "$tmp/est.json" ] || fail "--estimate-only wrote no memory report"
"$run" "$models/fashion_cnn.onnx" --estimate-only --replicas 2 \
  --input "input=$models/fashion_cnn.input.npy" >"$tmp/out" || fail "fashion_cnn --estimate-only"
grep -q "2 replica(s)" "$tmp/out" || fail "--estimate-only on replicas printed $(cat "$tmp/out")"
echo "ok: --estimate-only"

expect_error() { # expect_error <what> <text in message> <args...>
  what=$1 text=$2
  shift 2
  "$run" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] || fail "$what: exit code $rc, expected 1; stderr: $(cat "$tmp/err")"
  grep -q -- "$text" "$tmp/err" || fail "$what: stderr lacks '$text': $(cat "$tmp/err")"
  echo "ok: $what: $(head -c 200 "$tmp/err")"
}
cnn=$models/cnn.onnx
x="input=$models/cnn.input.npy"
expect_error "missing model" "cannot be opened" "$tmp/none.onnx" --input "$x"
head -c 1000 "$cnn" >"$tmp/cut.onnx"
expect_error "truncated model" "not a valid ONNX ModelProto" "$tmp/cut.onnx" --input "$x"
expect_error "missing input file" "does not exist" "$cnn" --input "input=$tmp/none.npy"
expect_error "no --input" "has no --input input=FILE.npy" "$cnn"
expect_error "unknown input" "--input x: the model has no input of that name" "$cnn" \
  --input "x=$models/cnn.input.npy"
expect_error "wrong shape" "input 'input' has rank 4" "$cnn" --input "input=$models/mlp.input.npy"
expect_error "wrong dtype" "the model takes float32, the file holds int32" "$cnn" \
  --input "input=$models/encoder.input.npy"
expect_error "unknown output" "--output y: the model has no output of that name" "$cnn" \
  --input "$x" --output "y=$tmp/y.npy"
expect_error "bad --input" "expects NAME=FILE.npy" "$cnn" --input input
expect_error "bad --dtype" "--dtype must be float32 or float16" "$cnn" --input "$x" --dtype int8
expect_error "bad --replicas" "does not split over --replicas 3" "$cnn" --input "$x" --replicas 3
expect_error "zero --replicas" "--replicas must be at least 1" "$cnn" --input "$x" --replicas 0
expect_error "non-numeric --replicas" "replicas" "$cnn" --input "$x" --replicas two
expect_error "--target alone" "--target: only --estimate-only estimates for a target" "$cnn" \
  --input "$x" --target bow
expect_error "unknown --target" "no IPU target named 'tpu': expected ipu2, bow, ipu21 or popart_ipu_model" "$cnn" \
  --estimate-only --target tpu
expect_error "--estimate-only with --output" "--estimate-only runs nothing, so --output" "$cnn" \
  --estimate-only --output "output=$tmp/y.npy"
expect_error "--estimate-only on a symbolic batch" "has a symbolic dimension: give --input" \
  "$models/fashion_cnn.onnx" --estimate-only
echo "pxl-run: all checks passed"
