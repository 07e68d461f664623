{{- define "hmc.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hmc.labels" -}}
app.kubernetes.io/name: harvester-machine-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "hmc.selector" -}}
app.kubernetes.io/name: harvester-machine-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
