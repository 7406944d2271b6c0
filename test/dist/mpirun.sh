#!/usr/bin/env bash
# Runs CMD as N instances on this host under Open MPI's mpirun, bounded by TIMEOUT seconds:
#   mpirun.sh N TIMEOUT CMD...
# --oversubscribe: more instances than cores is fine for tests (2-core machines). Root (CI
# containers) needs --allow-run-as-root. Shared-memory single copy is off: containers often
# forbid the cross-process reads (CMA) it uses. Every instance runs on this host, so no
# remote shell is needed (mpirun otherwise insists on finding ssh).
set -euo pipefail
n=$1
limit=$2
shift 2
args=(-np "$n" --oversubscribe --mca btl_vader_single_copy_mechanism none --mca plm_rsh_agent false)
[ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
exec timeout --kill-after=10 "$limit" mpirun "${args[@]}" "$@"
