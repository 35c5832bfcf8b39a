package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncWindow kinds.
const (
	// SyncWindowAllow: new revisions are applied only while an allow window is active.
	SyncWindowAllow = "allow"
	// SyncWindowDeny: no new revision is applied while a deny window is active.
	SyncWindowDeny = "deny"
)

// SyncWindow states (status.syncWindow.state, column WINDOW).
const (
	SyncWindowOpen   = "Open"
	SyncWindowClosed = "Closed"
)

// SyncWindow is a recurring time during which new revisions are (allow) or are not
// (deny) applied.
type SyncWindow struct {
	// kind is allow or deny. Outside every allow window (when there is one), or inside
	// any deny window, a new revision waits: Ready=False, reason SyncWindowClosed.
	// +required
	// +kubebuilder:validation:Enum=allow;deny
	Kind string `json:"kind"`

	// schedule is when the window opens: a cron expression of five fields (minute hour
	// day-of-month month day-of-week) or a descriptor (@daily, @weekly, …).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Schedule string `json:"schedule"`

	// duration the window stays active after each activation (at most 744h).
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Duration metav1.Duration `json:"duration"`

	// timeZone of the schedule, an IANA name such as Europe/Berlin. Default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// manualSync lets a requested sync (gitsync sync app NAME) through while this window
	// holds new revisions back. Default false: the request is refused.
	// +optional
	ManualSync bool `json:"manualSync,omitempty"`

	// selfHeal says whether drift of the applied revision is corrected while this window
	// holds new revisions back (as spec.selfHeal says, when that is not false). False:
	// drift is reported only (status.drift, Ready=False/DriftDetected) until the window
	// lets revisions through again; when several windows hold revisions back, one that
	// says false is enough. Default true.
	// +optional
	SelfHeal *bool `json:"selfHeal,omitempty"`
}

// SyncWindowStatus is what spec.syncWindows say now.
type SyncWindowStatus struct {
	// state is Open (new revisions are applied) or Closed (they wait).
	// +kubebuilder:validation:Enum=Open;Closed
	State string `json:"state"`

	// until is when the state changes next; unset when it does not within a year.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`

	// manualSync tells whether a requested sync runs while the state is Closed.
	// +optional
	ManualSync bool `json:"manualSync,omitempty"`

	// heldRevision is the revision a Closed window holds back, if any.
	// +optional
	HeldRevision string `json:"heldRevision,omitempty"`

	// selfHeal is false while a window that holds revisions back says selfHeal: false:
	// drift is reported, not corrected, until it is true again. Unset otherwise.
	// +optional
	SelfHeal *bool `json:"selfHeal,omitempty"`
}
