#!/bin/sh
# The main job's insight flags: --profile prints the execution summary and exactly one
# "estimated device time per step" line, --trace writes trace-event JSON, --memory-report the
# memory report, --report the report directories; a device loop is estimated faster per step
# than one run per step.
# usage: profile.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small="--limit 800 --test-limit 100"

# shellcheck disable=SC2086
"$mnist" $small --profile --trace "$tmp/trace.json" --memory-report "$tmp/memory.json" \
  >"$tmp/out" 2>"$tmp/err" || fail "--profile: exit code $?; stderr: $(cat "$tmp/err")"
[ "$(grep -c '^estimated device time per step: [0-9.]* us$' "$tmp/out")" -eq 1 ] ||
  fail "--profile: not exactly one 'estimated device time per step' line: $(cat "$tmp/out")"
grep -q "^Estimated device time on ipu2" "$tmp/out" || fail "--profile: no summary"
grep -q "^estimated throughput on ipu2: [0-9]* images/s (the emulator trained at [0-9]*)$" \
  "$tmp/out" || fail "--profile: no estimated throughput beside the emulator's: $(cat "$tmp/out")"
grep -q "^By op kind:" "$tmp/out" || fail "--profile: no per-kind table"
python3 - "$tmp/trace.json" "$tmp/memory.json" <<'PY' || fail "trace or memory report malformed"
import json, sys
trace = json.load(open(sys.argv[1]))
steps = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
assert any(e["name"].endswith("(MatMul)") for e in steps), "no MatMul step on IPU 0"
memory = json.load(open(sys.argv[2]))
assert memory["ipus"][0]["variables"] > 0
PY
echo "ok: --profile, --trace and --memory-report"

# --report: the training and test programs' report directories, at a few steps.
"$mnist" --limit 64 --test-limit 32 --report "$tmp/reports" >"$tmp/out" 2>"$tmp/err" ||
  fail "--report: exit code $?; stderr: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "--report printed on stderr: $(cat "$tmp/err")"
grep -q "^Reports of the training and test programs: $tmp/reports/train and $tmp/reports/test" \
  "$tmp/out" || fail "--report: not named in the output: $(cat "$tmp/out")"
sh "$(dirname "$0")/report_check.sh" "$tmp/reports" || fail "--report with the MLP"
echo "ok: --report writes the training and test programs' reports"

per_step() { # per_step <steps per execution> <dtype>
  "$mnist" --limit 8000 --test-limit 100 --profile --steps-per-execution "$1" --dtype "$2" \
    2>/dev/null | sed -n 's/^estimated device time per step: \([0-9.]*\) us$/\1/p'
}
one=$(per_step 1 float32)
loop=$(per_step 100 float32)
python3 -c "import sys; sys.exit(0 if float('$one') >= 1.2 * float('$loop') else 1)" ||
  fail "--steps-per-execution 100 is estimated at $loop us per step, not 1.2x faster than 1 ($one us)"
echo "ok: a device loop of 100 steps is estimated at $loop us per step against $one us"
# float16 runs the matrix units at 4x the float32 rate and packs twice the vector elements.
half=$(per_step 100 float16)
python3 -c "import sys; sys.exit(0 if float('$half') < float('$loop') else 1)" ||
  fail "--dtype float16 is estimated at $half us per step, not faster than float32 ($loop us)"
echo "ok: float16 is estimated at $half us per step against float32's $loop us"

"$mnist" $small --trace /nonexistent-dir/trace.json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--trace to a bad path: exit code $rc, expected 1"
grep -q "cannot open '/nonexistent-dir/trace.json'" "$tmp/err" || fail "--trace: $(cat "$tmp/err")"
"$mnist" $small --memory-report /nonexistent-dir/m.json >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--memory-report to a bad path: exit code $rc, expected 1"
grep -q "cannot open '/nonexistent-dir/m.json'" "$tmp/err" || fail "--memory-report: $(cat "$tmp/err")"
echo "ok: unwritable --trace and --memory-report paths are clear errors"
