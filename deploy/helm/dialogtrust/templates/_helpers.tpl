{{/*
Names, labels and the services' configuration. Every helper that needs more than the
root takes a list: (list $ "wit-issuer") or (list $ "wit-issuer" .Values.witIssuer).
*/}}

{{/* The name of a component's objects: namePrefix + component. */}}
{{- define "dt.name" -}}
{{- $root := index . 0 -}}
{{- printf "%s%s" $root.Values.namePrefix (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object: the base's two, and Helm's. */}}
{{- define "dt.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/part-of: dialogtrust
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end -}}

{{/* Selector labels: the component within this release. */}}
{{- define "dt.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/* Labels of the pods: the selector's and part-of. */}}
{{- define "dt.podLabels" -}}
{{ include "dt.selector" . }}
app.kubernetes.io/part-of: dialogtrust
{{- end -}}

{{/* The https URL of a service of this release: its Service's name in the namespace. */}}
{{- define "dt.url" -}}
{{- $root := index . 0 -}}
{{- printf "https://%s.%s.svc" (include "dt.name" .) $root.Release.Namespace -}}
{{- end -}}

{{/* The Secret a service's keys (or, with pkcs11, the token's PIN) come from (keys.kind). */}}
{{- define "dt.keySecret" -}}
{{- $root := index . 0 -}}{{- $v := index . 2 -}}
{{- if eq $root.Values.keys.kind "pkcs11" -}}
{{- required "keys.kind pkcs11: set keys.pkcs11.pinSecretName" $root.Values.keys.pkcs11.pinSecretName -}}
{{- else if $v.keys.secretName -}}
{{- $v.keys.secretName -}}
{{- else if eq $root.Values.keys.kind "shared" -}}
{{- printf "%s-keyring" (include "dt.name" (list $root (index . 1))) -}}
{{- else -}}
{{- printf "%s-signing-key" (include "dt.name" (list $root (index . 1))) -}}
{{- end -}}
{{- end -}}

{{/*
keys.kind pkcs11: the keys.pkcs11 section of a service's configuration. The module is
a path within the volume mounted at mountPath; the PIN is the file of the PIN Secret.
*/}}
{{- define "dt.pkcs11" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}{{- $v := index . 2 -}}
{{- $p := $root.Values.keys.pkcs11 -}}
{{- $module := printf "%s/%s" $p.mountPath (required "keys.kind pkcs11: set keys.pkcs11.module" $p.module) -}}
{{- $label := $v.keys.label | default (printf "dialogtrust-%s" (include "dt.name" (list $root $c))) -}}
{{- $s := dict "module" $module "pin_file" "/etc/dialogtrust/hsm/pin" "label" $label -}}
{{- if not (kindIs "invalid" $p.slot) -}}
{{- $_ := set $s "slot" (int $p.slot) -}}
{{- else -}}
{{- $_ := set $s "token_label" (required "keys.kind pkcs11: set keys.pkcs11.slot or keys.pkcs11.tokenLabel" $p.tokenLabel) -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}

{{/* The Redis addresses the services use. */}}
{{- define "dt.redisAddrs" -}}
{{- if .Values.redis.enabled -}}
{{- list (printf "%s:6379" (include "dt.name" (list . "redis"))) | toJson -}}
{{- else -}}
{{- if not .Values.redis.external.addrs -}}
{{- fail "redis.enabled is false: set redis.external.addrs" -}}
{{- end -}}
{{- .Values.redis.external.addrs | toJson -}}
{{- end -}}
{{- end -}}

{{/*
A service's configuration file: its config value, with what the chart owns set over
it: listen, tls, the key source, the store; and the defaults that name this release's
Services.
*/}}
{{- define "dt.config" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}{{- $v := index . 2 -}}
{{- $cfg := deepCopy ($v.config | default dict) -}}
{{- $url := include "dt.url" (list $root $c) -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int $v.port)) -}}
{{- if not (hasKey $cfg "issuer") -}}{{- $_ := set $cfg "issuer" $url -}}{{- end -}}
{{- if eq $c "wit-issuer" -}}
{{- if not (hasKey $cfg "public_url") -}}{{- $_ := set $cfg "public_url" $url -}}{{- end -}}
{{- if $v.spire.enabled -}}
{{- $_ := set $cfg "tls" (dict "workload_api_socket" (printf "unix:///run/spire/sockets/%s" $v.spire.socketName)) -}}
{{- else -}}
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/dialogtrust/tls/tls.crt" "key_file" "/etc/dialogtrust/tls/tls.key") -}}
{{- end -}}
{{- else -}}
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/dialogtrust/tls/tls.crt" "key_file" "/etc/dialogtrust/tls/tls.key") -}}
{{- $wit := include "dt.url" (list $root "wit-issuer") -}}
{{- if not (hasKey $cfg "wits") -}}
{{- $td := first (required "tts.config.trust_domains is required" $cfg.trust_domains) -}}
{{- $_ := set $cfg "wits" (list (dict "trust_domain" $td "jwks_url" (printf "%s/.well-known/jwks.json" $wit))) -}}
{{- end -}}
{{- if not (hasKey $cfg "wit_issuers") -}}{{- $_ := set $cfg "wit_issuers" (list $wit) -}}{{- end -}}
{{- end -}}
{{- $keys := deepCopy ($cfg.keys | default dict) -}}
{{- $_ := unset $keys "signing_key_file" -}}{{- $_ := unset $keys "data_dir" -}}{{- $_ := unset $keys "shared" -}}{{- $_ := unset $keys "pkcs11" -}}
{{- if eq $root.Values.keys.kind "file" -}}
{{- $_ := set $keys "signing_key_file" "/etc/dialogtrust/keys/signing-key.jwk" -}}
{{- else if eq $root.Values.keys.kind "shared" -}}
{{- $_ := set $keys "shared" (dict "secret_file" "/etc/dialogtrust/keyring/secret") -}}
{{- else if eq $root.Values.keys.kind "pkcs11" -}}
{{- $_ := set $keys "pkcs11" (include "dt.pkcs11" . | fromJson) -}}
{{- else -}}
{{- fail (printf "keys.kind %q: file, shared or pkcs11" $root.Values.keys.kind) -}}
{{- end -}}
{{- $_ := set $cfg "keys" $keys -}}
{{- $store := deepCopy ($cfg.store | default dict) -}}
{{- $redis := deepCopy ($store.redis | default dict) -}}
{{- $_ := set $store "type" "redis" -}}
{{- $_ := set $redis "addrs" (include "dt.redisAddrs" $root | fromJsonArray) -}}
{{- if and (not $root.Values.redis.enabled) $root.Values.redis.external.cluster -}}
{{- $_ := set $redis "cluster" true -}}
{{- end -}}
{{- if $root.Values.redis.auth.enabled -}}
{{- $_ := set $redis "username" $root.Values.redis.auth.username -}}
{{- $_ := set $redis "password_file" "/etc/dialogtrust/redis/password" -}}
{{- end -}}
{{- if and (not $root.Values.redis.enabled) $root.Values.redis.external.tls.enabled -}}
{{- $tls := dict -}}
{{- if $root.Values.redis.external.tls.caConfigMapName -}}{{- $_ := set $tls "ca_file" "/etc/dialogtrust/redis-ca/ca.crt" -}}{{- end -}}
{{- if $root.Values.redis.external.tls.serverName -}}{{- $_ := set $tls "server_name" $root.Values.redis.external.tls.serverName -}}{{- end -}}
{{- $_ := set $redis "tls" $tls -}}
{{- end -}}
{{- $_ := set $store "redis" $redis -}}
{{- $_ := set $cfg "store" $store -}}
{{- toYaml $cfg -}}
{{- end -}}
