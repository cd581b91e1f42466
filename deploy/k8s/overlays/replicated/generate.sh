#!/usr/bin/env bash
# Writes what the replicated overlay needs and what must never be committed:
#
#   secrets/ca.crt, ca.key                          a CA for the services' TLS certificates
#   secrets/wit-issuer.crt, .key, tts.crt, .key     serving certificates for the Services'
#                                                   DNS names, from that CA
#   secrets/wit-issuer-keyring.secret, tts-keyring.secret   the secrets the shared key
#                                                   rings are encrypted under (keys.shared)
#   secrets/redis-password                          the password of Redis user dialogtrust
#   secrets/redis-users.acl                         Redis's ACL file: that user with the
#                                                   password's SHA-256, keys "dialogtrust:*"
#                                                   only; the default user may only PING
#   secrets/w1.jwk                                  the private key of workload
#                                                   wimse://example.org/agent/w1; give it to
#                                                   that workload, not to the cluster
#   workloads/w1.pub.jwk                            its public key, registered with the
#                                                   wit-issuer (assertion method)
#
# Existing files are kept, so running it again changes nothing; --force replaces them.
# Needs openssl, and the dialogtrust command ($DIALOGTRUST, or built with go).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../generate-lib.sh
source "$here/../../generate-lib.sh"

umask 077
ns=dialogtrust
s="$here/secrets"
mkdir -p "$s" "$here/workloads"

if fresh "$s/w1.jwk"; then
  "$dt" key generate --alg ES256 --out "$s/w1.jwk" --force
fi
"$dt" key public --in "$s/w1.jwk" >"$here/workloads/w1.pub.jwk"

for k in wit-issuer-keyring tts-keyring; do
  if fresh "$s/$k.secret"; then
    openssl rand -base64 48 >"$s/$k.secret"
  fi
done
if fresh "$s/redis-password" || fresh "$s/redis-users.acl"; then
  openssl rand -base64 33 | tr '+/' '-_' >"$s/redis-password"
  hash="$(tr -d '\n' <"$s/redis-password" | openssl dgst -sha256 -r | cut -d' ' -f1)"
  printf '%s\n' \
    "user default on nopass -@all +ping" \
    "user dialogtrust on #$hash ~dialogtrust:* resetchannels +@all" >"$s/redis-users.acl"
fi

make_ca "$s" "dialogtrust example.org example CA"
make_serving_certs "$s" "$ns"
echo "generate.sh: example.org: files in $s and $here/workloads" >&2
