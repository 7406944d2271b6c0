#!/bin/sh
# Checks the report directory of `mnist --report DIR`: DIR/train and DIR/test each hold the
# memory report, the trace of the first runs, the profile and the page, consistent with each
# other. usage: report_check.sh DIR
set -u
dir=$1
for program in train test; do
  for f in memory.json trace.json profile.json profile.txt report.html; do
    [ -s "$dir/$program/$f" ] || { echo "FAIL: --report wrote no $program/$f"; exit 1; }
  done
done
python3 - "$dir" <<'PY' || { echo "FAIL: --report's files disagree"; exit 1; }
import json, os, sys
for program in ("train", "test"):
    d = os.path.join(sys.argv[1], program)
    memory = json.load(open(os.path.join(d, "memory.json")))
    assert memory["ipus"][0]["variables"] > 0, program
    assert len(memory["ipus"][0]["tiles"]) == 1472, program
    trace = json.load(open(os.path.join(d, "trace.json")))
    runs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"].startswith("run ")]
    profile = json.load(open(os.path.join(d, "profile.json")))
    # The trace holds the first two runs (Poplar's default count); the profile every run.
    assert 1 <= len(runs) <= 2 and len(runs) <= profile["runs"], (program, len(runs), profile["runs"])
    page = open(os.path.join(d, "report.html")).read()
    assert 'data-chart="timeline"' in page and 'data-tiles="1472"' in page, program
PY
