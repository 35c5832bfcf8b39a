package v1beta1

// +gitsync:hubonly

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Digest reflection policies (ImagePolicy spec.digestReflectionPolicy).
const (
	// ReflectNever leaves status.latestRef.digest empty.
	ReflectNever = "Never"
	// ReflectIfNotPresent looks the digest up once per chosen tag.
	ReflectIfNotPresent = "IfNotPresent"
	// ReflectAlways looks the digest up at every reconcile (a moving tag).
	ReflectAlways = "Always"
)

// ImagePolicySpec chooses one tag of an ImageRepository.
type ImagePolicySpec struct {
	// imageRepositoryRef names the ImageRepository; a namespace other than the
	// policy's own is refused unless the operator allows cross-namespace references.
	// +required
	ImageRepositoryRef NamespacedObjectReference `json:"imageRepositoryRef"`

	// policy says how to order the tags; exactly one of semver, alphabetical, numerical.
	// +required
	Policy ImagePolicyChoice `json:"policy"`

	// filterTags keeps only the tags matching pattern, and orders them by the value
	// extract makes of the match (Flux's filterTags).
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// digestReflectionPolicy: Never (default), IfNotPresent or Always look up the chosen
	// tag's manifest digest into status.latestRef.digest.
	// +optional
	// +kubebuilder:default=Never
	// +kubebuilder:validation:Enum=Never;IfNotPresent;Always
	DigestReflectionPolicy string `json:"digestReflectionPolicy,omitempty"`

	// suspend stops choosing.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// NamespacedObjectReference names an object, in the referrer's namespace unless namespace is set.
type NamespacedObjectReference struct {
	// name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the referent; default: the referrer's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ImagePolicyChoice is one ordering of tags.
// +kubebuilder:validation:XValidation:rule="(has(self.semver)?1:0)+(has(self.alphabetical)?1:0)+(has(self.numerical)?1:0)==1",message="exactly one of semver, alphabetical, numerical"
type ImagePolicyChoice struct {
	// semver chooses the highest version within range.
	// +optional
	SemVer *SemVerPolicy `json:"semver,omitempty"`

	// alphabetical chooses the last (asc, default) or first (desc) tag in string order.
	// +optional
	Alphabetical *OrderPolicy `json:"alphabetical,omitempty"`

	// numerical chooses the highest (asc, default) or lowest (desc) number.
	// +optional
	Numerical *OrderPolicy `json:"numerical,omitempty"`
}

// SemVerPolicy is a semver range, as Masterminds/semver reads it (`>=1.0.0 <2.0.0`, `^1.2`).
type SemVerPolicy struct {
	// range of acceptable versions.
	// +required
	// +kubebuilder:validation:MinLength=1
	Range string `json:"range"`
}

// OrderPolicy is an order: asc chooses the last tag, desc the first.
type OrderPolicy struct {
	// order: asc (default) or desc.
	// +optional
	// +kubebuilder:default=asc
	// +kubebuilder:validation:Enum=asc;desc
	Order string `json:"order,omitempty"`
}

// TagFilter keeps the tags matching pattern and orders them by extract.
type TagFilter struct {
	// pattern is a regular expression (RE2), with named groups for extract.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Pattern string `json:"pattern,omitempty"`

	// extract is the value the policy orders by, with `$name` or `${name}` for the
	// pattern's groups (Go's regexp Expand); default: the whole tag.
	// +optional
	Extract string `json:"extract,omitempty"`
}

// ImageRef is an image chosen by a policy.
type ImageRef struct {
	// name is the image's repository, e.g. `ghcr.io/org/app`.
	Name string `json:"name"`
	// tag chosen.
	Tag string `json:"tag"`
	// digest of the tag's manifest, when digestReflectionPolicy asks for it.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// String is name:tag, with @digest when the digest is known (as Flux writes an image).
func (r ImageRef) String() string {
	s := r.Name + ":" + r.Tag
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// ImagePolicyStatus is the observed state of an ImagePolicy.
type ImagePolicyStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (True: a tag was chosen).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// latestRef is the image the policy chose.
	// +optional
	LatestRef *ImageRef `json:"latestRef,omitempty"`

	// observedPreviousRef is the image chosen before latestRef.
	// +optional
	ObservedPreviousRef *ImageRef `json:"observedPreviousRef,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// ImagePolicy chooses the latest image of an ImageRepository by a policy.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imagepolicy
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.imageRepositoryRef.name`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.status.latestRef.tag`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImagePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImagePolicySpec   `json:"spec,omitempty"`
	Status ImagePolicyStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ImagePolicy) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImagePolicy) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// RepositoryNamespace is the namespace of the referenced ImageRepository.
func (in *ImagePolicy) RepositoryNamespace() string {
	if ns := in.Spec.ImageRepositoryRef.Namespace; ns != "" {
		return ns
	}
	return in.Namespace
}

// ImagePolicyList is a list of ImagePolicies.
// +kubebuilder:object:root=true
type ImagePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImagePolicy{}, &ImagePolicyList{})
}
