# Sourced by the overlays' generate.sh scripts (bash, set -euo pipefail), with their
# arguments: what they share. It sets force (1 with --force), tmp (a directory removed
# on exit) and dt (the dialogtrust command: $DIALOGTRUST, or built with go), checks
# that openssl is there, and defines fresh, make_ca and make_serving_certs.

lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$lib_dir/../.." && pwd)"
force=0
[ "${1:-}" = "--force" ] && force=1

command -v openssl >/dev/null 2>&1 || { echo "generate.sh: openssl not found" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dt="${DIALOGTRUST:-}"
if [ -z "$dt" ]; then
  (cd "$root" && go build -o "$tmp/dialogtrust" ./cmd/dialogtrust)
  dt="$tmp/dialogtrust"
fi

# fresh FILE: true when FILE is to be (re)written.
fresh() { [ "$force" -eq 1 ] || [ ! -s "$1" ]; }

# make_ca DIR CN: DIR/ca.crt and DIR/ca.key, a CA named CN for the services' TLS
# certificates.
make_ca() {
  local s="$1" cn="$2"
  if fresh "$s/ca.crt" || fresh "$s/ca.key"; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 365 \
      -keyout "$s/ca.key" -out "$s/ca.crt" -subj "/CN=$cn" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      2>/dev/null
  fi
}

# make_serving_certs DIR NS: DIR/wit-issuer.crt, .key, tts.crt, .key, serving
# certificates from DIR's CA for the Services' DNS names in namespace NS.
make_serving_certs() {
  local s="$1" ns="$2" svc
  for svc in wit-issuer tts; do
    if fresh "$s/$svc.crt" || fresh "$s/$svc.key"; then
      openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
        -keyout "$s/$svc.key" -out "$tmp/$svc.csr" -subj "/CN=$svc.$ns.svc" 2>/dev/null
      printf '%s\n' \
        "subjectAltName=DNS:$svc,DNS:$svc.$ns,DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local" \
        "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" >"$tmp/$svc.ext"
      openssl x509 -req -in "$tmp/$svc.csr" -CA "$s/ca.crt" -CAkey "$s/ca.key" -CAcreateserial \
        -CAserial "$tmp/ca.srl" -sha256 -days 90 -extfile "$tmp/$svc.ext" -out "$s/$svc.crt" 2>/dev/null
    fi
  done
}
