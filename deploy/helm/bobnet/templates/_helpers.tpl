{{/* The name of every object, release-scoped. */}}
{{- define "bobnet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "bobnet.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "bobnet.labels" -}}
{{ include "bobnet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "bobnet.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The environment of every BobNet container: plain settings as values,
secrets only as references to the operator's Secret. */}}
{{- define "bobnet.env" -}}
{{- if not (has .Values.redis.mode (list "single" "cluster" "sentinel")) }}
{{- fail (printf "redis.mode is %q: set single, cluster or sentinel" .Values.redis.mode) }}
{{- end }}
{{- if or (hasKey .Values.env "BOBNET_REDIS_MODE") (hasKey .Values.env "BOBNET_REDIS_STREAMS") }}
{{- fail "set redis.mode and redis.streams, not env.BOBNET_REDIS_MODE or env.BOBNET_REDIS_STREAMS" }}
{{- end }}
- name: BOBNET_REDIS_MODE
  value: {{ .Values.redis.mode | quote }}
{{- with .Values.redis.streams }}
- name: BOBNET_REDIS_STREAMS
  value: {{ . | toString | quote }}
{{- end }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- $pg := .Values.postgres }}
{{- if $pg.hosts }}
{{- if and (gt (len $pg.hosts) 1) (not (contains "target_session_attrs=read-write" $pg.options)) }}
{{- fail "postgres.hosts names several hosts: postgres.options must hold target_session_attrs=read-write, or BobNet may connect to a standby" }}
{{- end }}
- name: DATABASE_URL
  value: {{ printf "postgres://%s@%s/%s?%s" $pg.user (join "," $pg.hosts) $pg.database $pg.options | quote }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: {{ $pg.passwordKey }}
{{- end }}
{{- range $name, $key := .Values.secret.required }}
{{- if not (and $pg.hosts (eq $name "DATABASE_URL")) }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: {{ $key }}
{{- end }}
{{- end }}
{{- range $name, $key := .Values.secret.optional }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: {{ $key }}
      optional: true
{{- end }}
{{- end -}}
