#!/usr/bin/env bash
# Stops the local deployment that deploy/local/up.sh started: exactly the PIDs it
# recorded, each only while it still runs the executable recorded for it (a reused PID
# is left alone). SIGTERM first (the services shut down gracefully), SIGKILL after
# $DIALOGTRUST_LOCAL_STOP_TIMEOUT seconds (default 15). Then removes the directory's
# contents (binaries, configurations, keys, logs) unless --keep is given.
#
#   deploy/local/down.sh [--keep] [DIR]     # DIR: default as in up.sh
set -euo pipefail

keep=0
if [ "${1:-}" = "--keep" ]; then
  keep=1
  shift
fi
dir="${1:-${DIALOGTRUST_LOCAL_DIR:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/dialogtrust-local-$(id -u)}}"
stop_timeout="${DIALOGTRUST_LOCAL_STOP_TIMEOUT:-15}"

log() { printf 'down.sh: %s\n' "$*" >&2; }

# Only this user's own directory (not a symbolic link): its PID file says what to kill,
# and the clean-up below removes files.
if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -O "$dir" ]; }; then
  if [ -L "$dir" ]; then
    log "$dir is a symbolic link; refusing to touch it"
  else
    log "$dir belongs to another user; refusing to touch it"
  fi
  exit 1
fi
# Only a directory up.sh made: the clean-up below removes files.
if [ ! -f "$dir/.dialogtrust-local" ]; then
  log "$dir is not a directory made by deploy/local/up.sh; nothing to do"
  exit 0
fi

# ours PID EXE: the PID is alive, not a zombie, and runs EXE. A zombie has exited
# already; it only waits for its parent (or init) to collect it.
ours() {
  local pid=$1 exe=$2 state
  kill -0 "$pid" 2>/dev/null || return 1
  if [ -r "/proc/$pid/stat" ]; then
    state="$(sed -e 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1)"
    [ "$state" != Z ] || return 1
    [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || return 1
  fi
  return 0
}

names=()
pids=()
exes=()
if [ -f "$dir/pids" ]; then
  while read -r name pid exe; do
    [ -n "$pid" ] || continue
    names+=("$name")
    pids+=("$pid")
    exes+=("$exe")
  done <"$dir/pids"
fi

# Stop in reverse order of start: the TTSs before the wit-issuers they trust, Redis last.
for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
  if ours "${pids[$i]}" "${exes[$i]}"; then
    log "stopping ${names[$i]} (pid ${pids[$i]})"
    kill -TERM "${pids[$i]}" 2>/dev/null || true
  fi
done

deadline=$((SECONDS + stop_timeout))
left=1
while [ "$left" -eq 1 ]; do
  left=0
  for i in "${!pids[@]}"; do
    if ours "${pids[$i]}" "${exes[$i]}"; then
      left=1
    fi
  done
  [ "$left" -eq 1 ] || break
  if [ "$SECONDS" -ge "$deadline" ]; then
    for i in "${!pids[@]}"; do
      if ours "${pids[$i]}" "${exes[$i]}"; then
        log "${names[$i]} (pid ${pids[$i]}) did not stop within ${stop_timeout}s; killing it"
        kill -KILL "${pids[$i]}" 2>/dev/null || true
      fi
    done
    sleep 0.5
    break
  fi
  sleep 0.1
done

status=0
for i in "${!pids[@]}"; do
  if ours "${pids[$i]}" "${exes[$i]}"; then
    log "${names[$i]} (pid ${pids[$i]}) is still running"
    status=1
  fi
done
[ "$status" -eq 0 ] || exit "$status"

rm -f "$dir/pids"
if [ "$keep" -eq 0 ]; then
  rm -rf "$dir/bin" "$dir/logs" "$dir/data" "$dir/config" "$dir/env" "$dir/try"
  rm -f "$dir/.dialogtrust-local"
  rmdir "$dir" 2>/dev/null || true
fi
log "stopped"
