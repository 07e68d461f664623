{{- define "hmc.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hmc.labels" -}}
app.kubernetes.io/name: harvester-machine-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "hmc.selector" -}}
app.kubernetes.io/name: harvester-machine-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The controller's pods only (not the pre-delete Job's). */}}
{{- define "hmc.controllerSelector" -}}
{{ include "hmc.selector" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* repository:tag, or repository@digest when a digest is given (the tag is then left out). */}}
{{- define "hmc.image" -}}
{{- if .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" .Values.image.digest) -}}
{{- fail (printf "image.digest: %q is not a digest (sha256:<64 hex digits>)" .Values.image.digest) -}}
{{- end -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The controller's configuration, shared by the Deployment and the pre-delete Job. */}}
{{- define "hmc.env" -}}
- { name: WATCH_NAMESPACES, value: {{ if .Values.watchNamespaces }}{{ join "," .Values.watchNamespaces | quote }}{{ else }}"*"{{ end }} }
- { name: CREDENTIAL_NAMESPACE, value: {{ .Values.credentialNamespace | quote }} }
{{- /* default dict: an upgrade with --reuse-values from a chart without these values */}}
{{- $credentials := .Values.credentials | default dict }}
{{- with $credentials.labelSelector }}
- { name: CREDENTIAL_LABEL_SELECTOR, value: {{ . | quote }} }
{{- end }}
{{- with $credentials.fieldSelector }}
- { name: CREDENTIAL_FIELD_SELECTOR, value: {{ . | quote }} }
{{- end }}
- { name: HOOK_NAME, value: {{ .Values.hookName | quote }} }
- { name: LOG_LEVEL, value: {{ .Values.logLevel | quote }} }
- name: POD_NAMESPACE
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
- name: POD_NAME
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* /tmp is the only writable path (the root file system is read-only). On disk, not in
memory, and roomy: a self-contained executable may unpack its runtime there once. */}}
{{- define "hmc.tmpVolume" -}}
volumes:
  - name: tmp
    emptyDir: { sizeLimit: 512Mi }
{{- end -}}
