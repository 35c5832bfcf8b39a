package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// HealthCheck decides the health of one kind with CEL expressions over the object. The
// object is bound as `self`, and its top-level fields (`metadata`, `spec`, `status`, …)
// directly too: `self.status.ready == true` and `status.ready == true` both work. The
// first true expression of failed, inProgress, current decides; none true is Progressing.
type HealthCheck struct {
	// apiVersion of the kind, e.g. `example.com/v1`.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// kind the expressions judge.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// current is true when the object is healthy.
	// +kubebuilder:validation:MinLength=1
	Current string `json:"current"`

	// inProgress is true while the object is progressing.
	// +optional
	InProgress string `json:"inProgress,omitempty"`

	// failed is true when the object has failed (Degraded).
	// +optional
	Failed string `json:"failed,omitempty"`
}

// HookStatus reports one hook of the last run.
type HookStatus struct {
	// kind of the hook object.
	Kind string `json:"kind"`

	// namespace of the hook object (none for a cluster-scoped one).
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// name of the hook object (the generated one, for generateName hooks).
	Name string `json:"name"`

	// phase is PreSync, Sync, PostSync or SyncFail.
	Phase string `json:"phase"`

	// result is Running, Succeeded or Failed.
	Result string `json:"result"`

	// message from the hook's status (why it failed).
	// +optional
	Message string `json:"message,omitempty"`

	// revision the hook ran for.
	Revision string `json:"revision"`

	// finishedAt is when the hook finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// SyncProgress is where an ordered sync of one revision and spec generation stands
// while it waits for a hook or a wave between reconciles. The hooks it created so far,
// with those still running, are in status.hooks.
type SyncProgress struct {
	// revision being synced.
	Revision string `json:"revision"`

	// generation of the spec being synced.
	Generation int64 `json:"generation"`

	// startedAt is when the sync began: its waits end at startedAt + spec.timeout.
	StartedAt metav1.MicroTime `json:"startedAt"`

	// hooks tells whether the sync runs the hooks.
	// +optional
	Hooks bool `json:"hooks,omitempty"`

	// prune, when set, is what the sync request that started the sync asked of pruning
	// (gitsync.dev/sync-prune): the sync prunes, or not, whatever spec.prune says.
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// appliedWaves counts the waves applied so far (with the Sync hooks of each).
	// +optional
	AppliedWaves int `json:"appliedWaves,omitempty"`

	// created and configured count the objects the sync's earlier applies changed.
	// +optional
	Created int `json:"created,omitempty"`
	// +optional
	Configured int `json:"configured,omitempty"`

	// failure, when set, is why the sync failed: its SyncFail hooks are under way.
	// +optional
	Failure string `json:"failure,omitempty"`

	// failedPhase is where the sync failed (PreSync, Sync, PostSync, or a wave).
	// +optional
	FailedPhase string `json:"failedPhase,omitempty"`

	// failedAt is when the sync failed: SyncFail hooks wait until failedAt + spec.timeout.
	// +optional
	FailedAt *metav1.MicroTime `json:"failedAt,omitempty"`
}

// HookFailedReason: a hook (PreSync, Sync, PostSync) failed; nothing after it was applied.
const HookFailedReason = "HookFailed"

// HealthCheckInvalidReason: an expression of spec.healthChecks does not compile.
const HealthCheckInvalidReason = "HealthCheckInvalid"
