{{/* The chart's name, shortened to a DNS label. */}}
{{- define "mpi-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name alone when it already contains the chart's name. */}}
{{- define "mpi-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mpi-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mpi-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mpi-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mpi-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mpi-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mpi-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mpi-operator.lockNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/*
What the controller reads and writes in a namespace it serves (manifests/base/cluster-role.yaml, whose
rules test/integration/manifests/test_rbac.py pins down).
*/}}
{{- define "mpi-operator.namespacedRules" -}}
- apiGroups: [""]
  resources: [configmaps, secrets, services]
  verbs: [get, list, watch, create, update]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  # The launcher's log (mpioperator.io/progress, stall-timeout-seconds) and a failed rank's worker's, once.
  resources: [pods/log]
  verbs: [get]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [batch]
  resources: [jobs]
  # delete: a whole-job restart and the end of debug mode replace the launcher Job.
  verbs: [get, list, watch, create, update, delete]
- apiGroups: [batch]
  resources: [jobs/status]
  verbs: [update]
- apiGroups: [kubeflow.org]
  resources: [mpijobs]
  # update: the exec launch agent's finalizer, added and removed (removed also once --exec-agent is off).
  verbs: [get, list, watch, update, delete]
- apiGroups: [kubeflow.org]
  resources: [mpijobs/status, mpijobs/finalizers]
  verbs: [update]
- apiGroups: [scheduling.volcano.sh, scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [get, list, watch, create, update, delete]
# --gang-scheduling=GangScheduling: Kubernetes' own Workload API (immutable objects, never updated).
- apiGroups: [scheduling.k8s.io]
  resources: [podgroups]
  verbs: [get, list, watch, create, delete]
- apiGroups: [scheduling.k8s.io]
  resources: [workloads]
  verbs: [get, create, delete]
{{- if .Values.execAgent.enabled }}
{{ include "mpi-operator.execAgentRules" . }}
{{- end }}
{{- end }}

{{/*
execAgent.enabled (--exec-agent): each opted-in job's launcher gets a Role allowing pods/exec on its own
workers. Kubernetes lets a subject grant only what it holds, so the operator holds pods/exec itself, in
every namespace it serves (manifests/components/exec-agent/cluster-role.yaml, the same rules).
*/}}
{{- define "mpi-operator.execAgentRules" -}}
- apiGroups: [""]
  resources: [pods/exec]
  verbs: [create]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, create]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, create, update]
# A revoked grant's binding is deleted (its Role is emptied, and goes with the MPIJob).
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [delete]
{{- end }}

{{/* Cluster-scoped reads, needed whatever namespaces are served. */}}
{{- define "mpi-operator.clusterRules" -}}
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [get, list, watch]
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [mpijobs.kubeflow.org]
  verbs: [get]
{{- end }}

{{/* Combinations the schema cannot express; each fails with one line saying what to change. */}}
{{- define "mpi-operator.validate" -}}
{{- $le := .Values.leaderElection }}
{{- if and (gt (int .Values.replicas) 1) (not $le.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled: every replica would reconcile the same MPIJobs" }}
{{- end }}
{{- if $le.enabled }}
{{- if not (gt (float64 $le.leaseDuration) (float64 $le.renewDeadline)) }}
{{- fail "leaderElection.leaseDuration must be greater than leaderElection.renewDeadline" }}
{{- end }}
{{- if not (gt (float64 $le.renewDeadline) (mulf $le.retryPeriod 1.2)) }}
{{- fail "leaderElection.renewDeadline must be greater than 1.2 x leaderElection.retryPeriod" }}
{{- end }}
{{- end }}
{{- if eq (int .Values.metrics.port) (int .Values.healthPort) }}
{{- fail "metrics.port and healthPort must differ" }}
{{- end }}
{{- end }}
