#!/usr/bin/env bash
# Starts two trust domains (a.example and b.example) on this machine, each a wit-issuer
# and a Transaction Token Service, sharing one throwaway redis-server, all on loopback.
# The TTSs chain identities as `dialogtrust demo` does in process: TTS A is AS A, which
# issues grants for TTS B; TTS B is AS B, which redeems them (jwt-bearer) for access
# tokens of b.example, accepts those as subject tokens, and trusts a.example's WITs for
# that (only b.example's workloads get its Txn-Tokens).
#
#   deploy/local/up.sh        # builds, starts, waits for /readyz, prints URLs and an env file
#   <dir>/bin/dialogtrust demo --local <dir>/env      # the demo flow against it (<dir>: below)
#   deploy/local/down.sh      # stops exactly the processes up.sh started
#
# Everything lives in one directory, $DIALOGTRUST_LOCAL_DIR (default
# ${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/dialogtrust-local-<uid>, mode 0700; a symbolic link
# or a directory of another user is refused): the binaries, the TTS configurations written
# from the templates tts-{a,b}.yaml (config/), the signing keys (generated at first
# start), the logs (build.log: go build -v), the list of PIDs, the env file, and try/,
# where the printed "Try it" commands write a key and a WIT. Needs bash, go and
# redis-server; no root, no Docker, no curl (HTTP and RESP go through bash's /dev/tcp).
#
# Ports: redis-server and the wit-issuers take free ports (the wit-issuers print their
# URLs); the two TTSs must know each other's URL before they start, so up.sh chooses
# two free ports for them, and chooses again if one was taken meanwhile.
#
# DEVELOPMENT ONLY: the wit-issuers use the dev method, which authenticates nobody.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${DIALOGTRUST_LOCAL_DIR:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/dialogtrust-local-$(id -u)}"
# How long to wait for each service to answer /readyz (seconds).
ready_timeout="${DIALOGTRUST_LOCAL_READY_TIMEOUT:-60}"
domains=(a b)

log() { printf 'up.sh: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

# The directory holds the signing keys and the binaries that run: it must be this
# user's own. A symbolic link or another user's directory (in a shared /tmp, made
# before us to read the keys or plant binaries) is refused, not used.
own_dir() {
  if [ -L "$dir" ]; then
    die "$dir is a symbolic link; set DIALOGTRUST_LOCAL_DIR to a directory of your own"
  fi
  if [ -e "$dir" ] && [ ! -O "$dir" ]; then
    die "$dir belongs to another user; set DIALOGTRUST_LOCAL_DIR to a directory of your own"
  fi
}
own_dir

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
mkdir -p -m 700 "$dir"
# Again: another user could have made it between the check above and mkdir.
own_dir
[ -d "$dir" ] || die "$dir is not a directory"
chmod 700 "$dir"
touch "$dir/.dialogtrust-local"
rm -rf "$dir/bin" "$dir/logs" "$dir/data" "$dir/config" "$dir/pids" "$dir/env" "$dir/try"
mkdir -p "$dir/bin" "$dir/logs" "$dir/data/redis"
mkdir -m 700 "$dir/try"
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

# The build. With -trimpath and CGO_ENABLED=0 no package compiled by an ordinary go build
# or go test can be reused, so the first build here compiles every package the three
# commands need, the standard library included: measured with an empty build cache,
# 104 s of CPU (89 s user, 16 s system), so about a minute on 2 idle cores and 6 minutes
# on 2 cores shared with other builds (load average 25). Later builds reuse the first
# one's cache entries: 9 s measured on that busy machine, mostly linking. So that it is not silent meanwhile, it says
# every $progress_every seconds how long it has run and how many packages it has compiled
# (go build -v names each as it compiles it; a cached one is not named).
progress_every="${DIALOGTRUST_LOCAL_PROGRESS_SECONDS:-10}"
targets=(./cmd/wit-issuer ./cmd/tts ./cmd/dialogtrust)
total="$(cd "$root" && CGO_ENABLED=0 go list -deps "${targets[@]}" | wc -l)"
log "building wit-issuer, tts and dialogtrust into $dir/bin: up to $total packages, the first time about 1 to 2 minutes on 2 idle cores (longer on a busy machine), then about 10 s once Go's build cache holds an earlier up.sh build"
build_log="$dir/logs/build.log"
build_start=$SECONDS
(cd "$root" && CGO_ENABLED=0 exec go build -v -trimpath -o "$dir/bin/" "${targets[@]}") 2>"$build_log" &
build_pid=$!
# compiled: the packages go build -v has named so far (its other lines are errors).
compiled() { grep -cE '^[A-Za-z0-9._~/-]+$' "$build_log" || true; }
next=$progress_every
while kill -0 "$build_pid" 2>/dev/null; do
  sleep 1
  if [ $((SECONDS - build_start)) -ge "$next" ]; then
    log "building: $((SECONDS - build_start)) s, $(compiled) of $total packages compiled"
    next=$((next + progress_every))
  fi
done
if ! wait "$build_pid"; then
  grep -vE '^[A-Za-z0-9._~/-]+$' "$build_log" >&2 || true
  die "go build failed (log: $build_log)"
fi
log "built in $((SECONDS - build_start)) s ($(compiled) of $total packages compiled, the others from the build cache)"

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

# wait_listening LOGFILE PREFIX PID: prints the base URL the service prints once it
# listens ("tts listening on http://127.0.0.1:PORT (...)"). Returns 1 if the process
# exited first, 2 if it did not listen within the ready timeout.
wait_listening() {
  local file=$1 prefix=$2 pid=$3 line
  for _ in $(seq 1 $((ready_timeout * 10))); do
    line="$(grep -m1 "^$prefix listening on " "$file" 2>/dev/null || true)"
    if [ -n "$line" ]; then
      line="${line#"$prefix listening on "}"
      echo "${line%% *}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 2
}

# stop_started NAME PID: stops a process of a failed start attempt and forgets it.
stop_started() {
  kill "$2" 2>/dev/null || true
  wait "$2" 2>/dev/null || true
  grep -v "^$1 $2 " "$dir/pids" >"$dir/pids.tmp" || true
  mv "$dir/pids.tmp" "$dir/pids"
}

declare -A urls
# The wit-issuers listen on free ports (listen: 127.0.0.1:0); each prints its URL.
for d in "${domains[@]}"; do
  mkdir -p "$dir/data/$d/wit-issuer"
  "$dir/bin/wit-issuer" --config "$here/wit-issuer-$d.yaml" --data-dir "$dir/data/$d/wit-issuer" \
    --redis-addrs "$redis_addr" </dev/null >"$dir/logs/wit-issuer-$d.out" 2>"$dir/logs/wit-issuer-$d.err" &
  pid=$!
  record "wit-issuer-$d" "$pid" "$dir/bin/wit-issuer"
  if ! urls[wit_$d]="$(wait_listening "$dir/logs/wit-issuer-$d.out" wit-issuer "$pid")"; then
    die "wit-issuer-$d did not start listening (log: $dir/logs/wit-issuer-$d.err)"
  fi
  log "$d.example: wit-issuer ${urls[wit_$d]}"
done

# The TTSs chain identities: TTS A names TTS B's issuer (its URL) in its configuration
# and TTS B names TTS A's, so both URLs are fixed before either starts. up.sh chooses
# two free loopback ports below the ephemeral range, writes the configurations from the
# templates deploy/local/tts-{a,b}.yaml into $dir/config, checks them, and starts both.
# A port can be taken between the choice and the bind: then both stop and it tries
# again with other ports.

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port [TAKEN...]: a port in 20000-31999 that nothing listens on, not one of TAKEN.
free_port() {
  local p t ok
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 12000))
    ok=1
    for t in "$redis_port" "$@"; do
      [ "$p" != "$t" ] || ok=0
    done
    if [ "$ok" -eq 1 ] && port_free "$p"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# render TEMPLATE OUT: the template with every @NAME@ placeholder replaced from
# placeholders[NAME]; an unknown placeholder is an error.
declare -A placeholders
render() {
  local text name
  text="$(<"$1")"
  for name in "${!placeholders[@]}"; do
    text="${text//"@$name@"/"${placeholders[$name]}"}"
  done
  if [[ $text =~ @[A-Z_]+@ ]]; then
    die "$1: no value for the placeholder ${BASH_REMATCH[0]}"
  fi
  printf '%s\n' "$text" >"$2"
}

# a.example's identity provider, for the demo's ID-JAG path (step 8): no server, a key.
# TTS A trusts its ID tokens through the public JWKS file (chaining.as_a.id_token_issuers);
# `dialogtrust demo --local` signs them with the private JWK (mode 0600).
mkdir -p "$dir/data/a"
"$dir/bin/dialogtrust" key generate --alg ES256 --out "$dir/data/a/idp.jwk" ||
  die "could not generate the identity provider's key"
idp_pub="$("$dir/bin/dialogtrust" key public --in "$dir/data/a/idp.jwk")" ||
  die "could not read the identity provider's public key"
printf '{"keys":[%s]}\n' "$idp_pub" >"$dir/data/a/idp-jwks.json"

mkdir -p "$dir/config"
tts_ok=0
for attempt in 1 2 3 4 5; do
  pa="$(free_port)" || die "no free port for tts-a"
  pb="$(free_port "$pa")" || die "no free port for tts-b"
  placeholders=(
    [A_WIT_ISSUER]="${urls[wit_a]}" [B_WIT_ISSUER]="${urls[wit_b]}"
    [A_TTS_ADDR]="127.0.0.1:$pa" [B_TTS_ADDR]="127.0.0.1:$pb"
    [A_TTS]="http://127.0.0.1:$pa" [B_TTS]="http://127.0.0.1:$pb"
    [A_IDP_JWKS]="$dir/data/a/idp-jwks.json"
  )
  declare -A tts_pids=()
  for d in "${domains[@]}"; do
    mkdir -p "$dir/data/$d/tts"
    render "$here/tts-$d.yaml" "$dir/config/tts-$d.yaml"
    "$dir/bin/tts" -check-config --config "$dir/config/tts-$d.yaml" >"$dir/logs/tts-$d.check" 2>&1 ||
      die "$dir/config/tts-$d.yaml: $(tail -n 1 "$dir/logs/tts-$d.check")"
  done
  for d in "${domains[@]}"; do
    "$dir/bin/tts" --config "$dir/config/tts-$d.yaml" --data-dir "$dir/data/$d/tts" \
      --redis-addrs "$redis_addr" </dev/null >"$dir/logs/tts-$d.out" 2>"$dir/logs/tts-$d.err" &
    tts_pids[$d]=$!
    record "tts-$d" "${tts_pids[$d]}" "$dir/bin/tts"
  done
  retry=0
  for d in "${domains[@]}"; do
    want="${placeholders[${d^^}_TTS]}"
    if urls[tts_$d]="$(wait_listening "$dir/logs/tts-$d.out" tts "${tts_pids[$d]}")"; then
      [ "${urls[tts_$d]}" = "$want" ] || die "tts-$d listens on ${urls[tts_$d]}, not $want"
    elif grep -q "address already in use" "$dir/logs/tts-$d.err" 2>/dev/null; then
      log "tts-$d: port ${want##*:} was taken (attempt $attempt)"
      retry=1
    else
      die "tts-$d did not start listening (log: $dir/logs/tts-$d.err)"
    fi
  done
  if [ "$retry" -eq 0 ]; then
    tts_ok=1
    break
  fi
  for d in "${domains[@]}"; do
    stop_started "tts-$d" "${tts_pids[$d]}"
  done
done
[ "$tts_ok" -eq 1 ] || die "could not start the TTSs on free ports"
for d in "${domains[@]}"; do
  log "$d.example: tts ${urls[tts_$d]} (configuration $dir/config/tts-$d.yaml)"
done

# /readyz is 200 once the signing key is loaded, Redis answers and (for a TTS) the
# wit-issuers' JWKS and, for TTS B, TTS A's metadata and JWKS have been fetched.
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
    echo "DIALOGTRUST_LOCAL_${D}_TTS_CONFIG=$dir/config/tts-$d.yaml"
    echo "DIALOGTRUST_LOCAL_${D}_WIT_ISSUER_LOG=$dir/logs/wit-issuer-$d.err"
    echo "DIALOGTRUST_LOCAL_${D}_TTS_LOG=$dir/logs/tts-$d.err"
    if [ "$d" = a ]; then
      echo "DIALOGTRUST_LOCAL_A_IDP=https://idp.a.example"
      echo "DIALOGTRUST_LOCAL_A_IDP_KEY=$dir/data/a/idp.jwk"
    fi
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

Try it (the private key and the WIT go into $dir/try, mode 0700,
which down.sh removes; nothing is written into the current directory):
  set -a; . $dir/env; set +a
  t=\$DIALOGTRUST_LOCAL_DIR/try
  \$DIALOGTRUST_LOCAL_BIN/dialogtrust wit request --issuer \$DIALOGTRUST_LOCAL_A_WIT_ISSUER \\
      --workload wimse://a.example/agent/a1 --key-out "\$t/a1.jwk" > "\$t/a1.wit"
  \$DIALOGTRUST_LOCAL_BIN/dialogtrust txn request --tts \$DIALOGTRUST_LOCAL_A_TTS --wit "@\$t/a1.wit" \\
      --key "\$t/a1.jwk" --self-signed alice@a.example --scope trip.read --audience a.example --dialog D1

The whole demo (dialogs, a tool call, a signed handoff and identity chaining from
a.example to b.example) against these services:
  $dir/bin/dialogtrust demo --local $dir/env
EOF
