package v1alpha1

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
