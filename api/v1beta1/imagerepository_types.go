package v1beta1

// +gitsync:hubonly

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Image automation kinds and their defaults.
const (
	ImageRepositoryKind       = "ImageRepository"
	ImagePolicyKind           = "ImagePolicy"
	ImageUpdateAutomationKind = "ImageUpdateAutomation"

	DefaultImageRepositoryInterval = 5 * time.Minute
	DefaultImageRepositoryTimeout  = 60 * time.Second
	DefaultImageUpdateInterval     = 5 * time.Minute

	// MaxLatestTags is how many tags status.lastScanResult.latestTags holds at most.
	MaxLatestTags = 10
)

// Image automation condition reasons.
const (
	// ScanFailedReason: listing the tags of the registry failed.
	ScanFailedReason = "ScanFailed"
	// ImageRepositoryNotReadyReason: the ImagePolicy's ImageRepository has no scan yet.
	ImageRepositoryNotReadyReason = "ImageRepositoryNotReady"
	// NoMatchingTagReason: no tag of the repository passes the ImagePolicy.
	NoMatchingTagReason = "NoMatchingTag"
	// PolicyInvalidReason: the ImagePolicy's policy or filterTags cannot be used.
	PolicyInvalidReason = "PolicyInvalid"
	// UpdateFailedReason: rewriting, committing or pushing the update failed.
	UpdateFailedReason = "UpdateFailed"
	// LatestRefChangedReason (a Normal event): an ImagePolicy chose another image.
	LatestRefChangedReason = "LatestRefChanged"
	// PushedReason (a Normal event): an ImageUpdateAutomation pushed a commit.
	PushedReason = "Pushed"
)

// ImageRepositorySpec says which image's tags to list.
type ImageRepositorySpec struct {
	// image is the image's repository without tag, e.g. `ghcr.io/org/app` (Docker Hub
	// names like `nginx` mean `index.docker.io/library/nginx`).
	// +required
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// interval between scans of the registry; default 5m.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds one scan (every page of the tag list); default 60s.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// secretRef names a Secret of type kubernetes.io/dockerconfigjson in the same
	// namespace with the registry's credentials.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// exclusionList holds regular expressions; tags matching any are dropped from the
	// scan. Default `^.*\.sig$` (cosign signatures), as Flux.
	// +optional
	// +kubebuilder:default={"^.*\\.sig$"}
	// +kubebuilder:validation:MaxItems=25
	ExclusionList []string `json:"exclusionList,omitempty"`

	// suspend stops scanning.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ScanResult summarises the last scan; the full tag list is kept in the operator's storage.
type ScanResult struct {
	// tagCount is how many tags the scan kept.
	TagCount int `json:"tagCount"`

	// latestTags are up to ten tags, the last in descending order of their names.
	// +optional
	LatestTags []string `json:"latestTags,omitempty"`

	// scanTime is when the scan finished.
	// +optional
	ScanTime *metav1.Time `json:"scanTime,omitempty"`
}

// ImageRepositoryStatus is the observed state of an ImageRepository.
type ImageRepositoryStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (True: the last scan succeeded).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// canonicalImageName is the image's full name, registry included.
	// +optional
	CanonicalImageName string `json:"canonicalImageName,omitempty"`

	// lastScanResult summarises the last successful scan.
	// +optional
	LastScanResult *ScanResult `json:"lastScanResult,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// ImageRepository lists the tags of a container image in a registry, for ImagePolicies.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=imagerepo
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Tags",type=integer,JSONPath=`.status.lastScanResult.tagCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last scan",type=date,JSONPath=`.status.lastScanResult.scanTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImageRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageRepositorySpec   `json:"spec,omitempty"`
	Status ImageRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ImageRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ImageRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetInterval returns spec.interval, or its default when unset.
func (in *ImageRepository) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultImageRepositoryInterval)
}

// GetTimeout returns spec.timeout, or its default when unset.
func (in *ImageRepository) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultImageRepositoryTimeout)
}

// ImageRepositoryList is a list of ImageRepositories.
// +kubebuilder:object:root=true
type ImageRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImageRepository{}, &ImageRepositoryList{})
}
