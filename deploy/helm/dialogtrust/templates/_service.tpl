{{/*
One service (wit-issuer or tts): its configuration ConfigMap, Deployment, Service,
PodDisruptionBudget and ServiceMonitor, as deploy/k8s/base writes them.
Called with (list $ "wit-issuer" .Values.witIssuer).
*/}}
{{- define "dt.service" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}{{- $v := index . 2 -}}
{{- $name := include "dt.name" (list $root $c) -}}
{{- $wit := eq $c "wit-issuer" -}}
{{- $spire := and $wit $v.spire.enabled -}}
{{- $config := include "dt.config" . -}}
{{- $pkcs11 := eq $root.Values.keys.kind "pkcs11" -}}
{{- $keyVolume := get (dict "file" "signing-key" "shared" "keyring" "pkcs11" "hsm-pin") $root.Values.keys.kind -}}
{{- $keyDir := get (dict "file" "/etc/dialogtrust/keys" "shared" "/etc/dialogtrust/keyring" "pkcs11" "/etc/dialogtrust/hsm") $root.Values.keys.kind -}}
{{- $redisAuth := $root.Values.redis.auth.enabled -}}
{{- $redisCA := and (not $root.Values.redis.enabled) $root.Values.redis.external.tls.enabled $root.Values.redis.external.tls.caConfigMapName -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}-config
  labels:
    {{- include "dt.labels" (list $root $c) | nindent 4 }}
data:
  {{ $c }}.yaml: |
    {{- $config | nindent 4 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "dt.labels" (list $root $c) | nindent 4 }}
spec:
  replicas: {{ $v.replicas }}
  # Replicas share nothing but Redis (replay claims, and the key ring with keys.kind
  # shared) and the key Secret, so any number can run; during a rollout none is taken
  # away before its successor is ready.
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
  selector:
    matchLabels:
      {{- include "dt.selector" (list $root $c) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "dt.podLabels" (list $root $c) | nindent 8 }}
      annotations:
        # A changed configuration rolls the pods.
        checksum/config: {{ $config | sha256sum }}
    spec:
      # The service never calls the Kubernetes API.
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        # The Secret and ConfigMap files are group-readable by this group (mode 0440).
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "dt.selector" (list $root $c) | nindent 14 }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # Longer than shutdown_timeout in the configuration, so that requests in flight
      # finish before the kubelet kills the process.
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      containers:
        - name: {{ $c }}
          # With keys.kind pkcs11 the image built with cgo (deploy/docker, target hsm),
          # which can load the PKCS#11 module; the static image would refuse the token.
          {{- if $pkcs11 }}
          image: {{ required (printf "keys.kind pkcs11: set the hsmImage of %s (built with cgo, --target hsm)" $c) $v.hsmImage }}
          {{- else }}
          image: {{ $v.image }}
          {{- end }}
          {{- with $v.imagePullPolicy }}
          imagePullPolicy: {{ . }}
          {{- end }}
          args: ["--config", "/etc/dialogtrust/config/{{ $c }}.yaml"]
          {{- if or (not $wit) (and $pkcs11 $root.Values.keys.pkcs11.env) }}
          env:
            {{- if not $wit }}
            # The TTS fetches the wit-issuer's JWKS over TLS; Go reads its trusted
            # roots from this file instead of the image's public CA bundle.
            - name: SSL_CERT_FILE
              value: /etc/dialogtrust/ca/ca.crt
            {{- end }}
            {{- if $pkcs11 }}
            {{- with $root.Values.keys.pkcs11.env }}
            # For the HSM vendor's client (keys.pkcs11.env).
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- end }}
          {{- end }}
          ports:
            - name: https
              containerPort: {{ $v.port }}
              protocol: TCP
          # /healthz: the process serves. /readyz: the keys are loaded, Redis answers
          # (and, at the TTS, the wit-issuer's JWKS has been fetched); until then the
          # pod is not in the Service.
          livenessProbe:
            httpGet:
              path: /healthz
              port: https
              scheme: HTTPS
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /readyz
              port: https
              scheme: HTTPS
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            runAsNonRoot: true
            readOnlyRootFilesystem: true
            allowPrivilegeEscalation: false
            capabilities:
              drop: [ALL]
          volumeMounts:
            - name: config
              mountPath: /etc/dialogtrust/config
              readOnly: true
            {{- if $wit }}
            - name: workloads
              mountPath: /etc/dialogtrust/workloads
              readOnly: true
            {{- else }}
            - name: ca
              mountPath: /etc/dialogtrust/ca
              readOnly: true
            {{- end }}
            - name: {{ $keyVolume }}
              mountPath: {{ $keyDir }}
              readOnly: true
            {{- if $pkcs11 }}
            - name: pkcs11-module
              mountPath: {{ $root.Values.keys.pkcs11.mountPath }}
              readOnly: true
            {{- end }}
            {{- if $spire }}
            - name: spire-agent-socket
              mountPath: /run/spire/sockets
              readOnly: true
            {{- else }}
            - name: tls
              mountPath: /etc/dialogtrust/tls
              readOnly: true
            {{- end }}
            {{- if $redisAuth }}
            - name: redis-password
              mountPath: /etc/dialogtrust/redis
              readOnly: true
            {{- end }}
            {{- if $redisCA }}
            - name: redis-ca
              mountPath: /etc/dialogtrust/redis-ca
              readOnly: true
            {{- end }}
      volumes:
        - name: config
          configMap:
            name: {{ $name }}-config
        {{- if $wit }}
        - name: workloads
          configMap:
            name: {{ $v.workloadsConfigMapName | default (printf "%s-workloads" $name) }}
        {{- else }}
        - name: ca
          configMap:
            name: {{ $root.Values.trust.configMapName }}
        {{- end }}
        - name: {{ $keyVolume }}
          secret:
            secretName: {{ include "dt.keySecret" . }}
            defaultMode: 288 # 0440
        {{- if $pkcs11 }}
        # The PKCS#11 module (keys.pkcs11.volume), read-only: the library that signs
        # is not writable by the process.
        - name: pkcs11-module
          {{- toYaml $root.Values.keys.pkcs11.volume | nindent 10 }}
        {{- end }}
        {{- if $spire }}
        # The SPIRE agent's Workload API socket directory.
        - name: spire-agent-socket
          {{- if $v.spire.hostPath }}
          hostPath:
            path: {{ $v.spire.hostPath }}
            type: Directory
          {{- else }}
          csi:
            driver: {{ $v.spire.csiDriver }}
            readOnly: true
          {{- end }}
        {{- else }}
        - name: tls
          secret:
            secretName: {{ $v.tlsSecretName }}
            defaultMode: 288 # 0440
        {{- end }}
        {{- if $redisAuth }}
        - name: redis-password
          secret:
            secretName: {{ $root.Values.redis.auth.passwordSecretName }}
            defaultMode: 288 # 0440
        {{- end }}
        {{- if $redisCA }}
        - name: redis-ca
          configMap:
            name: {{ $root.Values.redis.external.tls.caConfigMapName }}
        {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "dt.labels" (list $root $c) | nindent 4 }}
spec:
  selector:
    {{- include "dt.selector" (list $root $c) | nindent 4 }}
  ports:
    - name: https
      port: 443
      targetPort: https
      protocol: TCP
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  labels:
    {{- include "dt.labels" (list $root $c) | nindent 4 }}
spec:
  # A voluntary disruption (node drain) never takes the last ready replicas away.
  minAvailable: {{ $v.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels:
      {{- include "dt.selector" (list $root $c) | nindent 6 }}
{{- if $root.Values.serviceMonitor.enabled }}
---
# /metrics is served on the service's own HTTPS listener (docs/operator.md,
# "Observability"); Prometheus verifies it like any client.
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $name }}
  labels:
    {{- include "dt.labels" (list $root $c) | nindent 4 }}
    {{- with $root.Values.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "dt.selector" (list $root $c) | nindent 6 }}
  endpoints:
    - port: https
      path: /metrics
      scheme: https
      interval: {{ $root.Values.serviceMonitor.interval }}
      tlsConfig:
        serverName: {{ printf "%s.%s.svc" $name $root.Release.Namespace }}
        ca:
          configMap:
            name: {{ $root.Values.trust.configMapName }}
            key: ca.crt
{{- end }}
{{- end -}}
