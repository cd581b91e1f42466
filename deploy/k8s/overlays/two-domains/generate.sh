#!/usr/bin/env bash
# Writes what the two-domains overlay needs and what must never be committed, for each
# trust domain (a, b):
#
#   <d>/secrets/ca.crt, ca.key                    a CA for the domain's TLS certificates
#   <d>/secrets/wit-issuer.crt, .key, tts.crt, .key   serving certificates for the
#                                                 Services' DNS names, from that CA
#   <d>/secrets/wit-issuer-signing-key.jwk, tts-signing-key.jwk   signing keys (ES256)
#   <d>/secrets/<d>1.jwk                          the private key of workload
#                                                 wimse://<d>.example/agent/<d>1; give it
#                                                 to that workload, not to the cluster
#   <d>/workloads/<d>1.pub.jwk                    its public key, registered with the
#                                                 wit-issuer (assertion method)
#
# Existing files are kept, so running it again changes nothing; --force replaces them.
# Needs openssl, and the dialogtrust command ($DIALOGTRUST, or built with go).
# A CA made here suits a trial; in production let cert-manager or SPIRE issue the
# certificates, and keep the signing keys in your secret store.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
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

umask 077
for d in a b; do
  ns="dialogtrust-$d"
  s="$here/$d/secrets"
  mkdir -p "$s" "$here/$d/workloads"

  for k in wit-issuer-signing-key tts-signing-key "${d}1"; do
    if fresh "$s/$k.jwk"; then
      "$dt" key generate --alg ES256 --out "$s/$k.jwk"
    fi
  done
  "$dt" key public --in "$s/${d}1.jwk" >"$here/$d/workloads/${d}1.pub.jwk"

  if fresh "$s/ca.crt" || fresh "$s/ca.key"; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 365 \
      -keyout "$s/ca.key" -out "$s/ca.crt" -subj "/CN=dialogtrust $d.example example CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      2>/dev/null
  fi
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
  echo "generate.sh: $d.example: files in $s and $here/$d/workloads" >&2
done
