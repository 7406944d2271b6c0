#!/bin/sh
# --estimate-only: the training program compiled for a target without training or data; the
# memory per IPU, one estimated step time and throughput; Bow faster than the GC200; a
# pipeline's IPUs each reported; --memory-report written from the estimate.
# usage: estimate.sh path/to/mnist
set -u
mnist=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# No data directory: nothing is loaded.
"$mnist" --estimate-only --data-dir "$tmp/nowhere" --memory-report "$tmp/m.json" \
  >"$tmp/out" 2>"$tmp/err" || fail "--estimate-only: exit code $?; stderr: $(cat "$tmp/err")"
grep -q "^Estimate on target 'ipu2' (1 IPU(s) per replica, 1 replica(s)), without running:" \
  "$tmp/out" || fail "--estimate-only: no heading: $(cat "$tmp/out")"
grep -q "^IPU 0: .* of 897.00 MiB; most loaded tile .* of 624.00 KiB" "$tmp/out" ||
  fail "--estimate-only: no memory per IPU and tile: $(cat "$tmp/out")"
[ "$(grep -c '^estimated device time per step: [0-9.]* us' "$tmp/out")" -eq 1 ] ||
  fail "--estimate-only: not one step time: $(cat "$tmp/out")"
grep -q "^estimated throughput: [0-9]* images/s$" "$tmp/out" ||
  fail "--estimate-only: no throughput: $(cat "$tmp/out")"
if grep -q "^epoch\|test accuracy" "$tmp/out"; then fail "--estimate-only trained: $(cat "$tmp/out")"; fi
python3 -c "import json, sys; m = json.load(open(sys.argv[1])); assert m['ipus'][0]['variables'] > 0" \
  "$tmp/m.json" || fail "--estimate-only --memory-report: malformed"
echo "ok: --estimate-only prints memory, step time and throughput without data"

step() { # step <args...>: the estimated step time in us
  "$mnist" --estimate-only "$@" 2>/dev/null |
    sed -n 's/^estimated device time per step: \([0-9.]*\) us.*/\1/p'
}
ipu2=$(step --steps-per-execution 100)
bow=$(step --steps-per-execution 100 --target bow)
python3 -c "import sys; sys.exit(0 if 1.2 * float('$bow') < float('$ipu2') else 1)" ||
  fail "--target bow is estimated at $bow us per step, not faster than ipu2's $ipu2 us"
echo "ok: Bow at $bow us per step against the GC200's $ipu2 us"

"$mnist" --estimate-only --pipeline-stages 2 --gradient-accumulation 4 >"$tmp/out" 2>"$tmp/err" ||
  fail "--estimate-only --pipeline-stages 2: exit code $?; stderr: $(cat "$tmp/err")"
grep -q "^IPU 1: " "$tmp/out" || fail "--pipeline-stages 2: no IPU 1: $(cat "$tmp/out")"
echo "ok: a pipeline's two IPUs estimated"

# Adam's state offloaded to Streaming Memory: loaded, updated and stored one variable at a
# time, so the update's peak grows by at most the largest variable's state (fc1.weight's two
# 784 x 512 float32 moments) while the always-live state leaves the IPU: the total on-chip
# memory is lower.
"$mnist" --estimate-only --optimizer adam --memory-report "$tmp/on_chip.json" >/dev/null 2>&1 ||
  fail "--optimizer adam --estimate-only failed"
"$mnist" --estimate-only --optimizer adam --offload-optimizer-state \
  --memory-report "$tmp/offloaded.json" >/dev/null 2>&1 ||
  fail "--offload-optimizer-state --estimate-only failed"
python3 - "$tmp/on_chip.json" "$tmp/offloaded.json" <<'PY' || fail "offloading does not lower the on-chip memory"
import json, sys
on_chip, offloaded = (json.load(open(p))["ipus"][0] for p in sys.argv[1:3])
state = 2 * 784 * 512 * 4
assert offloaded["variables"] < on_chip["variables"], (offloaded["variables"], on_chip["variables"])
assert offloaded["not_always_live_peak"] - on_chip["not_always_live_peak"] <= state, \
    (offloaded["not_always_live_peak"], on_chip["not_always_live_peak"])
assert offloaded["total"] < on_chip["total"], (offloaded["total"], on_chip["total"])
print("on-chip total %.2f MiB offloaded against %.2f MiB" %
      (offloaded["total"] / 2**20, on_chip["total"] / 2**20))
PY
echo "ok: offloading Adam's state lowers the total on-chip memory"
