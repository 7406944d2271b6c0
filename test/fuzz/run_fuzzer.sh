#!/bin/sh
# Runs a libFuzzer target for a bounded time, as a test: exits with the fuzzer's status.
#   run_fuzzer.sh <fuzzer> <seed corpus dir> <runs> <seconds> <artifact dir>
# Inputs the fuzzer finds go to a temporary corpus, removed afterwards (the seeds in the
# repository are only read); a crashing input is kept in <artifact dir> as crash-<sha1>.
set -u
fuzzer=$1 seeds=$2 runs=$3 seconds=$4 artifacts=$5
# Every input is written to a file: on a disk busy with other work that costs ten times the
# fuzzing itself, so scratch files go to memory when the machine has a tmpfs for it.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  TMPDIR=/dev/shm
  export TMPDIR
fi
corpus=$(mktemp -d "${TMPDIR:-/tmp}/pxl-fuzz-corpus.XXXXXX") || exit 1
trap 'rm -rf "$corpus"' EXIT
"$fuzzer" -runs="$runs" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 \
  -artifact_prefix="$artifacts/" "$corpus" "$seeds"
exit $?
