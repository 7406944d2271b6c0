#!/usr/bin/env bash
# Instances against replicas: the main job's data-parallel training with 2 replicas in one
# process (with 2 workers, the reference, and with 1) and as 2 processes x 1 replica under
# mpirun (1 worker each), on this machine. Prints each configuration's images/s, the MPI
# traffic per step, and the ratios to the reference.
#   test/bench/instances.sh [BUILD_DIR] [options of build/test/bench/instances but --workers]
set -euo pipefail
build=${1:-build}
shift || true
bench="$build/test/bench/instances"
launch="$(dirname "$0")/../dist/mpirun.sh"
rate() { awk '/^images\/s/ {print $2}' <<<"$1"; }
show() { grep -v '^images/s' <<<"$1"; }

reference=$("$bench" --replicas 2 --workers 2 "$@")
show "$reference"
one_worker=$("$bench" --replicas 2 --workers 1 "$@")
show "$one_worker"
instances=$(bash "$launch" 2 900 "$bench" --replicas 2 --workers 1 "$@")
show "$instances"
awk -v ref="$(rate "$reference")" -v one="$(rate "$one_worker")" -v two="$(rate "$instances")" \
  'BEGIN {
     printf "ratio to 1 process x 2 replicas on 2 workers: 1 worker %.2f, 2 processes x 1 replica %.2f\n",
       one / ref, two / ref
   }'
