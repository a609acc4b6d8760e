{{/* The release's base name: the release name, with "-ipamkit" unless it already says ipamkit. */}}
{{- define "ipamkit.fullname" -}}
{{- if contains "ipamkit" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-ipamkit" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ipamkit.labels" -}}
app.kubernetes.io/part-of: ipamkit
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ipamkit.poolNamespace" -}}
{{- default .Release.Namespace .Values.poolNamespace -}}
{{- end -}}

{{/* repository@digest when image.digest is set, else repository:tag (default the appVersion). */}}
{{- define "ipamkit.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The labels a component's pods are selected by. */}}
{{- define "ipamkit.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/name: {{ .name }}
{{- end -}}

{{/* The pod-level securityContext every pod gets: the runtime's default seccomp profile. */}}
{{- define "ipamkit.podSeccomp" -}}
seccompProfile: { type: RuntimeDefault }
{{- end -}}

{{- define "ipamkit.socket" -}}
{{- printf "%s/agent.sock" (trimSuffix "/" .Values.agent.socketDir) -}}
{{- end -}}

{{/* Checks the values once; every template includes it. */}}
{{- define "ipamkit.validate" -}}
{{- if not (has .Values.store.type (list "kubernetes" "etcd")) -}}
{{- fail (printf "store.type must be kubernetes or etcd, not %q" .Values.store.type) -}}
{{- end -}}
{{- if and (eq .Values.store.type "etcd") (empty .Values.store.etcd.endpoints) -}}
{{- fail "store.type etcd needs store.etcd.endpoints (e.g. [\"https://10.0.0.5:2379\"])" -}}
{{- end -}}
{{- if not (has .Values.reconciler.mode (list "cron" "watch")) -}}
{{- fail (printf "reconciler.mode must be cron or watch, not %q" .Values.reconciler.mode) -}}
{{- end -}}
{{- if and .Values.whereaboutsLease (ne .Values.store.type "kubernetes") -}}
{{- fail "whereaboutsLease needs store.type kubernetes (Whereabouts' Lease guards its pools there)" -}}
{{- end -}}
{{- if and .Values.reconciler.nodeSlices (ne .Values.store.type "kubernetes") -}}
{{- fail "reconciler.nodeSlices needs store.type kubernetes (NodeSlicePools live there)" -}}
{{- end -}}
{{- if and .Values.reconciler.nodeSlices (eq .Values.reconciler.mode "watch") -}}
{{- fail "reconciler.nodeSlices needs reconciler.mode cron (slices are kept after each scheduled pass)" -}}
{{- end -}}
{{- if and .Values.metrics.prometheusRule.enabled (not .Values.agent.metrics.enabled) (not .Values.reconciler.enabled) -}}
{{- fail "metrics.prometheusRule needs agent.metrics.enabled or reconciler.enabled: nothing to alert on" -}}
{{- end -}}
{{- range .Values.cni.binaryNames -}}
{{- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._-]*$" .) -}}
{{- fail (printf "cni.binaryNames: not a file name: %q" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where the etcd TLS Secret is mounted in the agent and the reconciler. */}}
{{- define "ipamkit.etcdTlsDir" -}}/etc/ipamkit/etcd{{- end -}}

{{/* The flat-file keys the installer adds: the agent's socket, the etcd connection, whereabouts_lease. */}}
{{- define "ipamkit.flatFileKeys" -}}
{{- $keys := dict "agent_socket" (include "ipamkit.socket" .) "agent_required" .Values.agent.required -}}
{{- if .Values.whereaboutsLease -}}
{{- $_ := set $keys "whereabouts_lease" true -}}
{{- end -}}
{{- if eq .Values.store.type "etcd" -}}
{{- $_ := set $keys "etcd_host" (join "," .Values.store.etcd.endpoints) -}}
{{- if .Values.store.etcd.tls.secretName -}}
{{- $dir := include "ipamkit.etcdTlsDir" . -}}
{{- $_ := set $keys "etcd_ca_cert_file" (printf "%s/ca.crt" $dir) -}}
{{- $_ := set $keys "etcd_cert_file" (printf "%s/tls.crt" $dir) -}}
{{- $_ := set $keys "etcd_key_file" (printf "%s/tls.key" $dir) -}}
{{- end -}}
{{- end -}}
{{- toJson (merge (deepCopy .Values.cni.extraFlatFileKeys) $keys) -}}
{{- end -}}

{{/* The installer's arguments (the init container and the token watcher). */}}
{{- define "ipamkit.installerArgs" -}}
- --host-root
- /host
- --cni-bin-dir
- {{ .Values.cni.binDir | quote }}
- --cni-conf-dir
- {{ .Values.cni.confDir | quote }}
{{- range .Values.cni.binaryNames }}
- --binary-name
- {{ . | quote }}
{{- end }}
{{- if .Values.cni.nodeFiles }}
- --node-files
{{- end }}
- --datastore
- {{ .Values.store.type }}
- --namespace
- {{ include "ipamkit.poolNamespace" . }}
- --flat-file-json
- {{ include "ipamkit.flatFileKeys" . | quote }}
{{- end -}}

{{- define "ipamkit.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: { drop: ["ALL"] }
{{- end -}}

