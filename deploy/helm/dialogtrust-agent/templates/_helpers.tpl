{{/* The name of the agent's objects. */}}
{{- define "agent.name" -}}
{{- .Values.name | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "agent.labels" -}}
app.kubernetes.io/name: {{ include "agent.name" . }}
app.kubernetes.io/component: agent
app.kubernetes.io/part-of: dialogtrust
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "agent.selector" -}}
app.kubernetes.io/name: {{ include "agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The proxy's configuration: proxy.config with the members the pod's layout decides set
over it: the operational listener on the pod's address, the egress on loopback, the
ingress's listener, its upstream (the application on loopback) and its certificate.
*/}}
{{- define "agent.proxyConfig" -}}
{{- $cfg := deepCopy (.Values.proxy.config | default dict) -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.proxy.opsPort)) -}}
{{- $egress := deepCopy ($cfg.egress | default dict) -}}
{{- $_ := set $egress "listen" (printf "127.0.0.1:%d" (int .Values.proxy.egressPort)) -}}
{{- $_ := set $cfg "egress" $egress -}}
{{- if .Values.proxy.ingress.enabled -}}
{{- $in := deepCopy ($cfg.ingress | default dict) -}}
{{- $_ := set $in "listen" (printf "0.0.0.0:%d" (int .Values.proxy.ingress.port)) -}}
{{- $_ := set $in "upstream" (printf "http://127.0.0.1:%d" (int .Values.app.port)) -}}
{{- $_ := set $in "tls" (dict "cert_file" "/etc/dialogtrust/tls/tls.crt" "key_file" "/etc/dialogtrust/tls/tls.key") -}}
{{- $_ := set $cfg "ingress" $in -}}
{{- else -}}
{{- $_ := unset $cfg "ingress" -}}
{{- end -}}
{{- $p := .Values.proxy.pkcs11 -}}
{{- if $p.enabled -}}
{{- if $p.assertionKeyLabel -}}
{{- $w := deepCopy ($cfg.workload | default dict) -}}
{{- $_ := unset $w "assertion_key_file" -}}
{{- $_ := set $w "pkcs11" (include "agent.pkcs11" (list . $p.assertionKeyLabel) | fromJson) -}}
{{- $_ := set $cfg "workload" $w -}}
{{- end -}}
{{- if $p.handoffKeyLabel -}}
{{- $h := deepCopy (required "proxy.pkcs11.handoffKeyLabel: proxy.config has no handoff section" $cfg.handoff) -}}
{{- $_ := unset $h "key_file" -}}
{{- $_ := set $h "pkcs11" (include "agent.pkcs11" (list . $p.handoffKeyLabel) | fromJson) -}}
{{- $_ := set $cfg "handoff" $h -}}
{{- end -}}
{{- end -}}
{{- if .Values.proxy.spire.enabled -}}
{{- $w := deepCopy ($cfg.workload | default dict) -}}
{{- $_ := set $w "workload_api" (dict "socket" (printf "unix:///run/spire/sockets/%s" .Values.proxy.spire.socketName)) -}}
{{- $_ := set $cfg "workload" $w -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}


{{/*
A pkcs11 section of the proxy's configuration for the key labelled (index . 1): the
module within the volume mounted at proxy.pkcs11.mountPath, the token, the PIN as the
file of the PIN Secret. Called with (list $ label).
*/}}
{{- define "agent.pkcs11" -}}
{{- $root := index . 0 -}}
{{- $p := $root.Values.proxy.pkcs11 -}}
{{- $module := printf "%s/%s" $p.mountPath (required "proxy.pkcs11.module is required" $p.module) -}}
{{- $pin := required "proxy.pkcs11.pinSecretName is required" $p.pinSecretName -}}
{{- $s := dict "module" $module "pin_file" "/etc/dialogtrust/hsm/pin" "label" (index . 1) -}}
{{- if not (kindIs "invalid" $p.slot) -}}
{{- $_ := set $s "slot" (int $p.slot) -}}
{{- else -}}
{{- $_ := set $s "token_label" (required "proxy.pkcs11: set slot or tokenLabel" $p.tokenLabel) -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}
