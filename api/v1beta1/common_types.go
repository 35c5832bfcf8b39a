package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ReconcileRequestStatus records the last handled value of the requested-at annotation.
type ReconcileRequestStatus struct {
	// lastHandledReconcileAt is the value of the gitsync.dev/requested-at annotation
	// that the controller handled last.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// durationOr returns *d, or def when d is unset or not positive.
func durationOr(d *metav1.Duration, def time.Duration) metav1.Duration {
	if d == nil || d.Duration <= 0 {
		return metav1.Duration{Duration: def}
	}
	return *d
}
