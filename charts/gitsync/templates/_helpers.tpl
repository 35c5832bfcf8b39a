{{/* The tag of the image: image.tag, or the chart's appVersion. */}}
{{- define "gitsync.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion -}}
{{- end }}

{{- define "gitsync.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ include "gitsync.tag" . }}
{{- end -}}
{{- end }}

{{/* The labels config/ selects the operator's pods by (do not change: selectors are immutable). */}}
{{- define "gitsync.selectorLabels" -}}
app.kubernetes.io/name: gitsync
{{- end }}

{{- define "gitsync.labels" -}}
{{ include "gitsync.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "gitsync.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* A file of files/ (a copy of config/, see internal/chart) as a map; the first YAML document of it. */}}
{{- define "gitsync.configFile" -}}
{{- $doc := index (splitList "\n---\n" (.ctx.Files.Get .path)) 0 -}}
{{- if not $doc }}{{ fail (printf "%s is missing: run make chart" .path) }}{{ end -}}
{{- toJson ($doc | fromYaml) -}}
{{- end }}
