package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncStatus values.
const (
	SyncStatusSynced    = "Synced"
	SyncStatusOutOfSync = "OutOfSync"
	SyncStatusUnknown   = "Unknown"
)

// HealthStatus values; from best to worst (status.health is the worst of its objects): Healthy, Progressing, Unknown, Missing, Degraded.
const (
	HealthStatusHealthy     = "Healthy"
	HealthStatusProgressing = "Progressing"
	HealthStatusDegraded    = "Degraded"
	HealthStatusMissing     = "Missing"
	HealthStatusUnknown     = "Unknown"
)

// SyncInfo says whether the cluster equals the source.
type SyncInfo struct {
	// status is Synced, OutOfSync or Unknown.
	// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown
	Status string `json:"status"`

	// revision the comparison was made against.
	// +optional
	Revision string `json:"revision,omitempty"`

	// chart and chartVersion name the chart rendered, when the path is a Helm chart.
	// +optional
	Chart string `json:"chart,omitempty"`
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
}

// HealthInfo aggregates the health of the applied objects (worst wins).
type HealthInfo struct {
	// status is Healthy, Progressing, Degraded, Missing or Unknown.
	// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Missing;Unknown
	Status string `json:"status"`

	// message about the least healthy object.
	// +optional
	Message string `json:"message,omitempty"`
}

// Inventory lists the objects an Application applied.
type Inventory struct {
	// entries of the inventory.
	// +optional
	Entries []InventoryEntry `json:"entries,omitempty"`
}

// InventoryEntry identifies one applied object.
type InventoryEntry struct {
	// id is `<namespace>_<name>_<group>_<kind>`.
	ID string `json:"id"`

	// v is the object's API version.
	V string `json:"v"`
}

// DriftedObject reports one object that differs from Git.
type DriftedObject struct {
	// object is `<Kind>/<namespace>/<name>` (no namespace for cluster-scoped objects).
	Object string `json:"object"`

	// fields are the field paths that differ from Git.
	// +optional
	Fields []string `json:"fields,omitempty"`

	// managers are the field managers that wrote the drifted fields.
	// +optional
	Managers []string `json:"managers,omitempty"`

	// detectedAt is when the drift was first seen.
	DetectedAt metav1.Time `json:"detectedAt"`
}

// SyncResult values of a history entry.
const (
	SyncResultSucceeded = "Succeeded"
	SyncResultFailed    = "Failed"
)

// SyncHistoryEntry records one sync.
type SyncHistoryEntry struct {
	// revision that was synced.
	Revision string `json:"revision"`

	// startedAt is when the sync began.
	StartedAt metav1.Time `json:"startedAt"`

	// finishedAt is when the sync ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// result is Succeeded or Failed.
	// +kubebuilder:validation:Enum=Succeeded;Failed
	Result string `json:"result"`

	// message says why it failed.
	// +optional
	Message string `json:"message,omitempty"`

	// chart and chartVersion name the chart rendered, when the path is a Helm chart.
	// +optional
	Chart string `json:"chart,omitempty"`
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`

	// signer is who signed the synced revision (the source's status.artifact.signer),
	// when the source verifies signatures.
	// +optional
	Signer string `json:"signer,omitempty"`

	// valuesRevisions are the revisions of the sources of spec.helm.valuesFilesFrom,
	// as `GitRepository/<name>@<revision>`.
	// +optional
	ValuesRevisions []string `json:"valuesRevisions,omitempty"`

	// created, configured, unchanged and pruned count the objects of each outcome.
	// +optional
	Created int `json:"created,omitempty"`
	// +optional
	Configured int `json:"configured,omitempty"`
	// +optional
	Unchanged int `json:"unchanged,omitempty"`
	// +optional
	Pruned int `json:"pruned,omitempty"`

	// attestation is the digest ("sha256:<hex>") of the signed attestation of this sync
	// (an in-toto statement in a DSSE envelope, kept in the ConfigMap
	// gitsync-attestations-<name>), when the operator signs syncs
	// (gitsync run --attestation-key-secret). `gitsync verify app` checks it.
	// +optional
	Attestation string `json:"attestation,omitempty"`
}

// SelectiveSyncStatus records a selective sync (gitsync sync app NAME --resource …).
type SelectiveSyncStatus struct {
	// revision the objects were applied from.
	Revision string `json:"revision"`

	// objects applied, as `<Kind>/<namespace>/<name>`.
	// +kubebuilder:validation:MaxItems=100
	Objects []string `json:"objects"`

	// syncedAt is when they were applied.
	SyncedAt metav1.Time `json:"syncedAt"`
}

// ApplicationStatus is the observed state of an Application.
type ApplicationStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, Healthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// sync says whether the cluster equals the source's revision.
	// +optional
	Sync *SyncInfo `json:"sync,omitempty"`

	// health aggregates the applied objects' health.
	// +optional
	Health *HealthInfo `json:"health,omitempty"`

	// lastAppliedRevision is the last revision applied successfully.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// lastAttemptedRevision is the last revision an apply was attempted for.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// inventory lists the applied objects.
	// +optional
	Inventory *Inventory `json:"inventory,omitempty"`

	// drift lists the objects that differ from Git now.
	// +optional
	Drift []DriftedObject `json:"drift,omitempty"`

	// hooks lists the hooks of the last run, in the order they ran.
	// +optional
	Hooks []HookStatus `json:"hooks,omitempty"`

	// hooksRevision is the revision whose sync last ran its hooks to the end: a resync
	// of it runs no hook again (a requested sync does).
	// +optional
	HooksRevision string `json:"hooksRevision,omitempty"`

	// syncProgress is where an ordered sync stands while it waits, between reconciles,
	// for a hook to finish or a wave to be healthy; it is cleared when the sync ends.
	// +optional
	SyncProgress *SyncProgress `json:"syncProgress,omitempty"`

	// history holds the last 10 syncs, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	History []SyncHistoryEntry `json:"history,omitempty"`

	// serviceAccount names the identity the last sync applied with:
	// "system:serviceaccount:<namespace>:<name>" when a service account was impersonated
	// (spec.serviceAccountName, or else the operator's --default-service-account), or
	// "operator" when the operator's own identity applied (neither is set).
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`

	// valuesRevisions are the revisions of the sources of spec.helm.valuesFilesFrom that
	// the last applied sync read, as `GitRepository/<name>@<revision>`.
	// +optional
	ValuesRevisions []string `json:"valuesRevisions,omitempty"`

	// selectiveSync names the objects the last selective sync applied, and at which
	// revision; cleared by the next full sync.
	// +optional
	SelectiveSync *SelectiveSyncStatus `json:"selectiveSync,omitempty"`

	// syncWindow is what spec.syncWindows say now (unset without windows).
	// +optional
	SyncWindow *SyncWindowStatus `json:"syncWindow,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}
