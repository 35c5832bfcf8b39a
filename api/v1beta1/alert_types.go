package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Alert severities.
const (
	// SeverityInfo sends every event.
	SeverityInfo = "info"
	// SeverityError sends Warning events only.
	SeverityError = "error"
)

// Reasons of the notification kinds' conditions.
const (
	// DeliveryFailedReason: the last delivery through the Provider failed.
	DeliveryFailedReason = "DeliveryFailed"
	// ProviderNotFoundReason: the Alert's providerRef names no Provider.
	ProviderNotFoundReason = "ProviderNotFound"
	// InvalidSpecReason: a field cannot be used (a regex that does not compile).
	InvalidSpecReason = "InvalidSpec"
)

// Kinds of the notification API.
const (
	ProviderKind = "Provider"
	AlertKind    = "Alert"
)

// EventSource selects the objects whose events an Alert sends.
type EventSource struct {
	// kind of the object: GitRepository, HelmRepository, OCIRepository, Application,
	// ApplicationSet or Cluster.
	// +required
	// +kubebuilder:validation:Enum=GitRepository;HelmRepository;OCIRepository;Application;ApplicationSet;Cluster
	Kind string `json:"kind"`

	// name of the object, or `*` for all of that kind (narrowed by matchLabels).
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the object; only the Alert's own namespace is matched, so it may be
	// left empty or set to it.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// matchLabels the object must carry (with name `*`).
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// AlertSpec says which events go to which Provider.
type AlertSpec struct {
	// providerRef names the Provider in the same namespace.
	// +required
	ProviderRef LocalObjectReference `json:"providerRef"`

	// eventSources are the objects whose events are sent.
	// +required
	// +kubebuilder:validation:MinItems=1
	EventSources []EventSource `json:"eventSources"`

	// eventSeverity: info sends all events, error only Warning ones.
	// +optional
	// +kubebuilder:default=info
	// +kubebuilder:validation:Enum=info;error
	EventSeverity string `json:"eventSeverity,omitempty"`

	// inclusionList: when set, an event is sent only if its message matches one of
	// these regular expressions.
	// +optional
	InclusionList []string `json:"inclusionList,omitempty"`

	// exclusionList: an event whose message matches one of these regular expressions
	// is not sent.
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// summary is added to every message (e.g. the cluster or environment).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Summary string `json:"summary,omitempty"`

	// suspend stops this Alert while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// AlertStatus is the observed state of an Alert.
type AlertStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (False when the Provider is missing, a regex does not compile,
	// or the Provider's last delivery failed).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Alert routes the events of GitRepositories, HelmRepositories and Applications to a Provider.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.providerRef.name`
// +kubebuilder:printcolumn:name="Severity",type=string,JSONPath=`.spec.eventSeverity`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AlertSpec   `json:"spec,omitempty"`
	Status AlertStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Alert) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Alert) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// AlertList is a list of Alerts.
// +kubebuilder:object:root=true
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Alert{}, &AlertList{})
}
