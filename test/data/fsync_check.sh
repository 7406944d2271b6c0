#!/bin/sh
# Traces one checkpoint save (test_data's "one traced save" case) and checks that after the
# temporary is renamed over the checkpoint, the directory is opened and fsynced: POSIX makes a
# rename durable only through its directory's fsync.
set -eu
strace=$1
exe=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# LeakSanitizer cannot run under ptrace (the sanitizer build's test_data): its leaks are checked
# by the data suite's own run, so this traced one leaves them out.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Where tracing is not allowed (a container without ptrace), there is nothing to observe:
# skip (Meson's code 77) rather than fail.
"$strace" -o /dev/null true 2>/dev/null || { echo "strace cannot trace here: skipped"; exit 77; }
"$strace" -f -o "$log" -e trace=open,openat,fsync,rename,renameat,renameat2 \
  "$exe" -tc='one traced save*' >/dev/null
if awk '
  /rename.*ckpt_traced\.safetensors"/ { renamed = 1; next }
  renamed && /O_DIRECTORY/ && match($0, /= [0-9]+$/) { fd = substr($0, RSTART + 2); next }
  renamed && fd != "" && index($0, "fsync(" fd ")") && /= 0$/ { synced = 1 }
  END { exit synced ? 0 : 1 }' "$log"; then
  echo "the save fsyncs the directory after its rename"
else
  echo "no fsync of the directory after the rename; the save's system calls:"
  grep -E 'ckpt_traced|fsync|O_DIRECTORY' "$log" | tail -n 20
  exit 1
fi
