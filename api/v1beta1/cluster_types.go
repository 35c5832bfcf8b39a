package v1beta1

// +gitsync:hubonly

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterKind is the kind of Cluster objects.
const ClusterKind = "Cluster"

// Reasons of a Cluster's Ready condition and of an Application that targets one.
const (
	// ClusterUnreachableReason: the Cluster's API server did not answer (or refused the
	// connection); an Application on it prunes nothing and its health is Unknown.
	ClusterUnreachableReason = "ClusterUnreachable"
	// ClusterNotReadyReason: an Application's Cluster is missing, suspended, not probed
	// yet, or its kubeconfig is refused; the Application waits.
	ClusterNotReadyReason = "ClusterNotReady"
	// KubeConfigInvalidReason: the Cluster's kubeconfig Secret is missing or its
	// kubeconfig is refused (exec plugins, auth providers, files, a non-http(s) server).
	KubeConfigInvalidReason = "KubeConfigInvalid"
	// ClusterReachableReason: the API server answered /version with the credentials.
	ClusterReachableReason = "ClusterReachable"
)

// DefaultKubeConfigKey is the Secret key a Cluster's kubeconfig is read from when
// spec.kubeConfig.secretRef.key is unset.
const DefaultKubeConfigKey = "value"

// ClusterSpec says how gitsync reaches another Kubernetes cluster.
type ClusterSpec struct {
	// kubeConfig names the Secret (in the Cluster's namespace) holding a kubeconfig for
	// the cluster. Exec plugins and auth providers in it are refused: only certificates,
	// tokens and basic auth are used.
	// +required
	KubeConfig KubeConfigReference `json:"kubeConfig"`

	// serviceAccountName, when set, is impersonated on the remote cluster (as
	// system:serviceaccount:<this namespace>:<name>) for everything gitsync does there.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// suspend stops probing the cluster and syncing the Applications that target it.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// KubeConfigReference names the Secret key holding a kubeconfig.
type KubeConfigReference struct {
	// secretRef names the Secret and the key (default `value`) of the kubeconfig.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// key in the Secret's data; default `value`.
	// +optional
	Key string `json:"key,omitempty"`
}

// ClusterStatus is the observed state of a Cluster.
type ClusterStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (True: the API server answered and accepted the credentials).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// kubernetesVersion is the remote API server's version (its /version gitVersion).
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// lastProbeTime is when the cluster was last probed.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
}

// Cluster is another Kubernetes cluster that Applications in this namespace can target
// with spec.cluster.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gscluster
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Cluster) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Cluster) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// KubeConfigKey returns the Secret key of the kubeconfig, defaulted.
func (in *Cluster) KubeConfigKey() string {
	if k := in.Spec.KubeConfig.SecretRef.Key; k != "" {
		return k
	}
	return DefaultKubeConfigKey
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Cluster{}, &ClusterList{})
}
