#!/usr/bin/env bash
# Starts two trust domains (a.example and b.example) on this machine, each a wit-issuer
# and a Transaction Token Service, sharing one throwaway redis-server, all on loopback:
#
#   deploy/local/up.sh        # builds, starts, waits for /readyz, prints URLs and an env file
#   deploy/local/down.sh      # stops exactly the processes up.sh started
#
# Everything lives in one directory, $DIALOGTRUST_LOCAL_DIR (default
# ${TMPDIR:-/tmp}/dialogtrust-local-<uid>): the binaries, the signing keys (generated at
# first start), the logs, the list of PIDs and the env file. Needs bash, go and
# redis-server; no root, no Docker, no curl (HTTP and RESP go through bash's /dev/tcp).
#
# DEVELOPMENT ONLY: the wit-issuers use the dev method, which authenticates nobody.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${DIALOGTRUST_LOCAL_DIR:-${TMPDIR:-/tmp}/dialogtrust-local-$(id -u)}"
# How long to wait for each service to answer /readyz (seconds).
ready_timeout="${DIALOGTRUST_LOCAL_READY_TIMEOUT:-60}"
domains=(a b)

log() { printf 'up.sh: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

# The deployment is the configuration files in deploy/local and the flags below; an
# override left in the caller's environment (DIALOGTRUST_TTS_CONFIG, ...) must not
# change it, and an unknown one would stop the services from starting.
while read -r v; do
  unset "$v"
done < <(compgen -e | grep -E '^DIALOGTRUST_(WIT_ISSUER|TTS)_' || true)

command -v go >/dev/null 2>&1 || die "go not found on PATH"
command -v redis-server >/dev/null 2>&1 || die "redis-server not found on PATH (Debian: apt-get install redis-server)"

# A PID file that names live processes means a deployment is running here already;
# starting a second one over it would lose track of the first one's processes.
if [ -f "$dir/pids" ]; then
  while read -r _ pid _; do
    if kill -0 "$pid" 2>/dev/null; then
      die "already running in $dir (pid $pid); stop it with deploy/local/down.sh"
    fi
  done <"$dir/pids"
fi
if [ -e "$dir" ] && [ ! -f "$dir/.dialogtrust-local" ]; then
  die "$dir exists and was not made by up.sh; set DIALOGTRUST_LOCAL_DIR to another directory"
fi
mkdir -p "$dir"
chmod 700 "$dir"
touch "$dir/.dialogtrust-local"
rm -rf "$dir/bin" "$dir/logs" "$dir/data" "$dir/pids" "$dir/env"
mkdir -p "$dir/bin" "$dir/logs" "$dir/data/redis"
: >"$dir/pids"

started=0
on_exit() {
  local status=$?
  if [ "$status" -ne 0 ] && [ "$started" -eq 1 ]; then
    log "failed; the last lines of each log:"
    for f in "$dir"/logs/*; do
      [ -f "$f" ] || continue
      printf -- '--- %s\n' "$f" >&2
      tail -n 20 "$f" >&2 || true
    done
    log "stopping what was started"
    "$here/down.sh" "$dir" >&2 || true
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building wit-issuer, tts and dialogtrust into $dir/bin"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$dir/bin/" ./cmd/wit-issuer ./cmd/tts ./cmd/dialogtrust)

# record NAME PID EXECUTABLE: down.sh stops exactly these PIDs, and only while the PID
# still runs this executable, so a PID the system has reused is left alone. (Not read
# from /proc/PID/exe here: right after the fork the child may not have exec'd yet.)
record() {
  printf '%s %s %s\n' "$1" "$2" "$(readlink -f "$3")" >>"$dir/pids"
}

# redis_pid HOST PORT: the process_id the Redis server at HOST:PORT reports (INFO
# server), or nothing.
redis_pid() (
  exec 3<>"/dev/tcp/$1/$2" || exit 0
  printf 'INFO server\r\n' >&3
  while IFS= read -r -t 1 line <&3; do
    line="${line%$'\r'}"
    case "$line" in
      process_id:*)
        echo "${line#process_id:}"
        exit 0
        ;;
    esac
  done
)

# http_status HOST PORT PATH: the status code of GET PATH, or 000.
http_status() (
  exec 3<>"/dev/tcp/$1/$2" 2>/dev/null || {
    echo 000
    exit 0
  }
  printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$3" "$1" "$2" >&3
  IFS=' ' read -r -t 5 _ code _ <&3 || true
  echo "${code:-000}"
)

# start_redis: a redis-server on a random free loopback port, persistence off (replay
# claims of a local run need not survive it). A port can be taken between the choice and
# the bind, and another server may already answer there, so the server is only accepted
# when the process_id it reports is the one just started.
redis_port=""
started=1
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 30000))
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    --dir "$dir/data/redis" </dev/null >"$dir/logs/redis.log" 2>&1 &
  pid=$!
  record redis "$pid" "$(command -v redis-server)"
  ok=0
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    if [ "$(redis_pid 127.0.0.1 "$port" 2>/dev/null)" = "$pid" ]; then
      ok=1
      break
    fi
    sleep 0.1
  done
  if [ "$ok" -eq 1 ]; then
    redis_port=$port
    break
  fi
  log "redis-server did not come up on port $port (attempt $attempt)"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -v "^redis $pid " "$dir/pids" >"$dir/pids.tmp" || true
  mv "$dir/pids.tmp" "$dir/pids"
done
[ -n "$redis_port" ] || die "could not start redis-server"
redis_addr="127.0.0.1:$redis_port"
log "redis-server on $redis_addr"

# wait_url NAME LOGFILE PREFIX: the base URL the service prints once it listens
# ("wit-issuer listening on http://127.0.0.1:PORT (...)").
wait_url() {
  local name=$1 file=$2 prefix=$3 pid=$4 line
  for _ in $(seq 1 $((ready_timeout * 10))); do
    line="$(grep -m1 "^$prefix listening on " "$file" 2>/dev/null || true)"
    if [ -n "$line" ]; then
      line="${line#"$prefix listening on "}"
      echo "${line%% *}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || die "$name exited during start (log: ${file%.out}.err)"
    sleep 0.1
  done
  die "$name did not start listening within ${ready_timeout}s"
}

declare -A urls
for d in "${domains[@]}"; do
  td="$d.example"
  mkdir -p "$dir/data/$d/wit-issuer" "$dir/data/$d/tts"

  "$dir/bin/wit-issuer" --config "$here/wit-issuer-$d.yaml" --data-dir "$dir/data/$d/wit-issuer" \
    --redis-addrs "$redis_addr" </dev/null >"$dir/logs/wit-issuer-$d.out" 2>"$dir/logs/wit-issuer-$d.err" &
  pid=$!
  record "wit-issuer-$d" "$pid" "$dir/bin/wit-issuer"
  urls[wit_$d]="$(wait_url "wit-issuer-$d" "$dir/logs/wit-issuer-$d.out" wit-issuer "$pid")"

  DIALOGTRUST_TTS_WIT_JWKS_URL="${urls[wit_$d]}/.well-known/jwks.json" \
    "$dir/bin/tts" --config "$here/tts-$d.yaml" --data-dir "$dir/data/$d/tts" \
    --redis-addrs "$redis_addr" </dev/null >"$dir/logs/tts-$d.out" 2>"$dir/logs/tts-$d.err" &
  pid=$!
  record "tts-$d" "$pid" "$dir/bin/tts"
  urls[tts_$d]="$(wait_url "tts-$d" "$dir/logs/tts-$d.out" tts "$pid")"
  log "$td: wit-issuer ${urls[wit_$d]}, tts ${urls[tts_$d]}"
done

# /readyz is 200 once the signing key is loaded, Redis answers and (for a TTS) the
# wit-issuer's JWKS has been fetched.
for key in "${!urls[@]}"; do
  u="${urls[$key]}"
  hostport="${u#http://}"
  host="${hostport%:*}"
  port="${hostport##*:}"
  status=000
  for _ in $(seq 1 $((ready_timeout * 10))); do
    status="$(http_status "$host" "$port" /readyz)"
    [ "$status" = 200 ] && break
    sleep 0.1
  done
  [ "$status" = 200 ] || die "$key at $u: /readyz answered $status within ${ready_timeout}s"
done

{
  echo "DIALOGTRUST_LOCAL_DIR=$dir"
  echo "DIALOGTRUST_LOCAL_BIN=$dir/bin"
  echo "DIALOGTRUST_LOCAL_REDIS=$redis_addr"
  for d in "${domains[@]}"; do
    D="$(echo "$d" | tr '[:lower:]' '[:upper:]')"
    echo "DIALOGTRUST_LOCAL_${D}_TRUST_DOMAIN=$d.example"
    echo "DIALOGTRUST_LOCAL_${D}_WIT_ISSUER=${urls[wit_$d]}"
    echo "DIALOGTRUST_LOCAL_${D}_TTS=${urls[tts_$d]}"
  done
} >"$dir/env"

cat <<EOF
dialogtrust local deployment is ready (stop it with deploy/local/down.sh)

  a.example  wit-issuer ${urls[wit_a]}   tts ${urls[tts_a]}
  b.example  wit-issuer ${urls[wit_b]}   tts ${urls[tts_b]}
  redis      $redis_addr
  logs       $dir/logs

env file: $dir/env
$(cat "$dir/env")

Try it:
  set -a; . $dir/env; set +a
  \$DIALOGTRUST_LOCAL_BIN/dialogtrust wit request --issuer \$DIALOGTRUST_LOCAL_A_WIT_ISSUER \\
      --workload wimse://a.example/agent/a1 --key-out a1.jwk > a1.wit
  \$DIALOGTRUST_LOCAL_BIN/dialogtrust txn request --tts \$DIALOGTRUST_LOCAL_A_TTS --wit @a1.wit \\
      --key a1.jwk --self-signed alice@a.example --scope trip.read --audience a.example --dialog D1
EOF
