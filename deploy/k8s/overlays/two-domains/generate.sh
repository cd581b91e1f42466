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
# shellcheck source=../../generate-lib.sh
source "$here/../../generate-lib.sh"

umask 077
for d in a b; do
  ns="dialogtrust-$d"
  s="$here/$d/secrets"
  mkdir -p "$s" "$here/$d/workloads"

  for k in wit-issuer-signing-key tts-signing-key "${d}1"; do
    if fresh "$s/$k.jwk"; then
      "$dt" key generate --alg ES256 --out "$s/$k.jwk" --force
    fi
  done
  "$dt" key public --in "$s/${d}1.jwk" >"$here/$d/workloads/${d}1.pub.jwk"

  make_ca "$s" "dialogtrust $d.example example CA"
  make_serving_certs "$s" "$ns"
  echo "generate.sh: $d.example: files in $s and $here/$d/workloads" >&2
done
