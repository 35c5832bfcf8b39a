package v1beta1

// +gitsync:hubonly

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdateStrategySetters is the one update strategy: Flux's setter markers.
const UpdateStrategySetters = "Setters"

// ImageUpdateAutomationSpec says which repository to update, where, and how to commit.
type ImageUpdateAutomationSpec struct {
	// sourceRef names the GitRepository to update; its URL and credentials are used to
	// clone and push. A namespace other than the automation's own is refused unless the
	// operator allows cross-namespace references.
	// +required
	SourceRef ImageUpdateSourceReference `json:"sourceRef"`

	// git says what to check out, how to commit and where to push.
	// +required
	GitSpec ImageUpdateGitSpec `json:"git"`

	// update says which files to rewrite; default: the whole checkout, strategy Setters.
	// +optional
	Update *UpdateStrategy `json:"update,omitempty"`

	// interval between runs; default 5m.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// policySelector selects the ImagePolicies (in the automation's namespace) whose
	// markers are rewritten; none: every policy of the namespace.
	// +optional
	PolicySelector *metav1.LabelSelector `json:"policySelector,omitempty"`

	// suspend stops updating.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ImageUpdateSourceReference names the GitRepository an automation writes to.
type ImageUpdateSourceReference struct {
	// kind of the source; only GitRepository.
	// +optional
	// +kubebuilder:default=GitRepository
	// +kubebuilder:validation:Enum=GitRepository
	Kind string `json:"kind,omitempty"`

	// name of the GitRepository.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the GitRepository; default: the automation's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ImageUpdateGitSpec is Flux's spec.git.
type ImageUpdateGitSpec struct {
	// checkout.ref is the branch to clone; default: the GitRepository's spec.ref.
	// +optional
	Checkout *GitCheckoutSpec `json:"checkout,omitempty"`

	// commit says who commits and with which message.
	// +required
	Commit CommitSpec `json:"commit"`

	// push says where to push; default: the branch checked out.
	// +optional
	Push *PushSpec `json:"push,omitempty"`
}

// GitCheckoutSpec is the reference to check out.
type GitCheckoutSpec struct {
	// ref to check out; only a branch can be pushed to.
	// +required
	Reference GitRepositoryRef `json:"ref"`
}

// CommitSpec is the commit's author, message and signature.
type CommitSpec struct {
	// author of the commits.
	// +required
	Author CommitUser `json:"author"`

	// messageTemplate is a Go template of the commit message; its data has
	// .AutomationObject (namespace/name), .Changed (.Changes: [{OldValue, NewValue,
	// Setter}], .FileChanges: file → setter → [changes], .Objects), .Values
	// (policy name → image) as Flux's.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// signingKey names a Secret with `git.asc` (an armored OpenPGP private key,
	// `passphrase` optional) or `identity` (an SSH private key) to sign commits with.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`
}

// CommitUser is a commit's author.
type CommitUser struct {
	// name of the author.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// email of the author.
	// +required
	// +kubebuilder:validation:MinLength=1
	Email string `json:"email"`
}

// SigningKey names the Secret of a signing key.
type SigningKey struct {
	// secretRef names a Secret in the automation's namespace.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
}

// PushSpec is where the commit goes.
type PushSpec struct {
	// branch to push to; a new branch starts from the checked-out commit (review before merge).
	// +optional
	Branch string `json:"branch,omitempty"`

	// refspec pushed instead of (or besides) branch, e.g. `refs/heads/main:refs/heads/auto`.
	// +optional
	Refspec string `json:"refspec,omitempty"`
}

// UpdateStrategy says which files are rewritten and how.
type UpdateStrategy struct {
	// path in the repository under which YAML files are rewritten; default: the root.
	// +optional
	Path string `json:"path,omitempty"`

	// strategy: Setters (Flux's `# {"$imagepolicy": "NS:NAME[:tag|:name|:digest]"}` markers).
	// +optional
	// +kubebuilder:default=Setters
	// +kubebuilder:validation:Enum=Setters
	Strategy string `json:"strategy,omitempty"`
}

// ImageUpdateAutomationStatus is the observed state of an ImageUpdateAutomation.
type ImageUpdateAutomationStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (True: the last run succeeded, with or without a push).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastAutomationRunTime is when the automation last ran.
	// +optional
	LastAutomationRunTime *metav1.Time `json:"lastAutomationRunTime,omitempty"`

	// lastPushCommit is the commit last pushed.
	// +optional
	LastPushCommit string `json:"lastPushCommit,omitempty"`

	// lastPushTime is when it was pushed.
	// +optional
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`

	// observedPolicies are the policies' images at the last run, by policy name.
	// +optional
	ObservedPolicies map[string]ImageRef `json:"observedPolicies,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// ImageUpdateAutomation rewrites the image references marked in a GitRepository's files
// to what ImagePolicies chose, commits and pushes.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imageupdate
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Last push",type=string,JSONPath=`.status.lastPushCommit`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImageUpdateAutomation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageUpdateAutomationSpec   `json:"spec,omitempty"`
	Status ImageUpdateAutomationStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ImageUpdateAutomation) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImageUpdateAutomation) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetInterval returns spec.interval, or its default when unset.
func (in *ImageUpdateAutomation) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultImageUpdateInterval)
}

// SourceNamespace is the namespace of the GitRepository.
func (in *ImageUpdateAutomation) SourceNamespace() string {
	if ns := in.Spec.SourceRef.Namespace; ns != "" {
		return ns
	}
	return in.Namespace
}

// UpdatePath is spec.update.path, or the root.
func (in *ImageUpdateAutomation) UpdatePath() string {
	if in.Spec.Update != nil && in.Spec.Update.Path != "" {
		return in.Spec.Update.Path
	}
	return "."
}

// ImageUpdateAutomationList is a list of ImageUpdateAutomations.
// +kubebuilder:object:root=true
type ImageUpdateAutomationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdateAutomation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImageUpdateAutomation{}, &ImageUpdateAutomationList{})
}
