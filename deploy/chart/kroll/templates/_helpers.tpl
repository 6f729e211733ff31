{{/* The release's prefix: the release name when it says kroll, else <release>-kroll. */}}
{{- define "kroll.fullname" -}}
{{- if contains "kroll" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kroll" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kroll.manager" -}}{{ include "kroll.fullname" . }}-controller-manager{{- end -}}
{{- define "kroll.dashboard" -}}{{ include "kroll.fullname" . }}-dashboard{{- end -}}

{{- define "kroll.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kroll.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: kroll
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels; the argument is a list: the root context and the component. */}}
{{- define "kroll.selector" -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
{{- end -}}

{{- define "kroll.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "kroll.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
