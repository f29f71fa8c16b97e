{{/* The objects' name: fullnameOverride, else the release name, with the chart's unless it holds
it (`helm install eoc-operator charts/eoc-operator` names them eoc-operator). */}}
{{- define "eoc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the controller's pods. */}}
{{- define "eoc.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels. */}}
{{- define "eoc.labels" -}}
{{ include "eoc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "eoc.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The namespaces whose pools the controller serves: the watched ones, or none for all. */}}
{{- define "eoc.namespaced" -}}
{{- if .Values.watchNamespaces -}}true{{- end -}}
{{- end -}}

{{/* Whether either listener authenticates its callers with Kubernetes (TokenReview and
SubjectAccessReview), so the controller's ServiceAccount needs to create both. */}}
{{- define "eoc.reviews" -}}
{{- if or (eq .Values.auth.pick "kubernetes") (eq .Values.auth.metrics "kubernetes") -}}true{{- end -}}
{{- end -}}

{{/* The Secrets of the certificates: the CA the chart makes, the listeners' serving certificate
(with the CA in ca.crt), and the gateway's client certificate. */}}
{{- define "eoc.caSecret" -}}{{ include "eoc.fullname" . }}-ca{{- end -}}
{{- define "eoc.servingSecret" -}}{{ include "eoc.fullname" . }}-serving{{- end -}}
{{- define "eoc.gatewaySecret" -}}
{{- default (printf "%s-gateway-client" (include "eoc.fullname" .)) .Values.gateway.clientCertSecret.name -}}
{{- end -}}
{{- define "eoc.gatewaySecretNamespace" -}}
{{- default .Release.Namespace .Values.gateway.clientCertSecret.namespace -}}
{{- end -}}

{{/* The DNS names the serving certificate holds: the pick, headless pick and metrics Services',
short and qualified. */}}
{{- define "eoc.servingNames" -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list -}}
{{- range $svc := list "pick" "pick-headless" "metrics" -}}
{{- $base := printf "%s-%s" (include "eoc.fullname" $) $svc -}}
{{- $names = concat $names (list $base (printf "%s.%s" $base $ns) (printf "%s.%s.svc" $base $ns) (printf "%s.%s.svc.cluster.local" $base $ns)) -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* RBAC subjects from {users, groups, serviceAccounts ("namespace/name")}. */}}
{{- define "eoc.subjects" -}}
{{- range .users }}
- kind: User
  apiGroup: rbac.authorization.k8s.io
  name: {{ . | quote }}
{{- end }}
{{- range .groups }}
- kind: Group
  apiGroup: rbac.authorization.k8s.io
  name: {{ . | quote }}
{{- end }}
{{- range .serviceAccounts }}
{{- $sa := splitList "/" . }}
- kind: ServiceAccount
  namespace: {{ index $sa 0 }}
  name: {{ index $sa 1 }}
{{- end }}
{{- end -}}
