package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a HelmRepository.
const (
	DefaultHelmRepositoryInterval = 10 * time.Minute
	DefaultHelmRepositoryTimeout  = 60 * time.Second
)

// Reasons of HelmRepository and of Applications rendering its charts.
const (
	// ChartNotFoundReason: the repository has no chart of that name, or no version in the range.
	ChartNotFoundReason = "ChartNotFound"
	// ChartPullFailedReason: the chart archive could not be downloaded or loaded.
	ChartPullFailedReason = "ChartPullFailed"
	// IndexInvalidReason: the repository's index.yaml does not parse.
	IndexInvalidReason = "IndexInvalid"
)

// HelmRepositorySpec names a Helm chart repository.
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || self.url.startsWith('oci://') == (has(self.verify.provider) && self.verify.provider != 'helm')",message="verify.provider helm (provenance files) is for http(s) repositories, cosign and notation for oci:// ones"
type HelmRepositorySpec struct {
	// url of the repository: https:// (or http://) for a chart repository with an
	// index.yaml, oci:// for charts in an OCI registry (oci://host/path; a chart is the
	// repository <path>/<chart> there).
	// +required
	// +kubebuilder:validation:Pattern=`^(https?|oci)://.+`
	URL string `json:"url"`

	// interval between polls: a conditional GET of index.yaml (nothing is downloaded
	// when it did not change), or the tag lists of the charts that Applications name.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds each request to the repository.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// secretRef names a Secret in the same namespace with username + password (basic
	// auth, sent to the repository's host only) and ca.crt (a CA to trust).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// suspend stops polling while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// verify requires every chart an Application renders from this repository to be
	// signed by a key of the Secret: for http(s) repositories a provenance file
	// (`<chart URL>.prov`, as `helm package --sign` writes it) stating the archive's
	// digest, for oci:// ones a cosign or notation signature of the chart's manifest. A
	// chart that does not verify is not rendered (the Application's Ready=False, reason
	// VerificationFailed; what it applied before stays). Chart dependencies fetched from
	// a repository are not verified.
	// +optional
	Verify *HelmRepositoryVerification `json:"verify,omitempty"`
}

// HelmRepositoryVerification says how the charts of a HelmRepository must be signed.
// +kubebuilder:validation:XValidation:rule="!has(self.matchOIDCIdentity) || self.provider == 'cosign'",message="matchOIDCIdentity is for provider cosign (keyless)"
type HelmRepositoryVerification struct {
	// provider: `helm` (http(s) repositories), provenance files checked against an
	// OpenPGP keyring; `cosign` or `notation` (oci:// repositories), signatures of the
	// chart's manifest.
	// +optional
	// +kubebuilder:default=helm
	// +kubebuilder:validation:Enum=helm;cosign;notation
	Provider string `json:"provider,omitempty"`

	// secretRef names a Secret in the same namespace: for `helm`, armored OpenPGP public
	// keys (the keyring; `gpg --export --armor`); for `cosign`, PEM public keys
	// (`cosign.pub`; classic `sha256-<hex>.sig` signatures or Sigstore bundles by the key
	// pair) or the key `trusted_root.json` (keyless: a private Sigstore's TrustedRoot
	// JSON; Sigstore bundles or classic keyless signatures checked against it and
	// matchOIDCIdentity, nothing fetched
	// from the public Sigstore instance); for `notation`, PEM CA certificates.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`

	// matchOIDCIdentity lists the OIDC identities a keyless cosign signature may carry:
	// at least one must match the signing certificate's issuer and subject. Required
	// with a trusted root (keyless); refused with public keys.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is an OIDC identity a keyless signature may carry: regular
// expressions (RE2), each matched against the whole value.
type OIDCIdentityMatch struct {
	// issuer matches the certificate's OIDC issuer, e.g.
	// `^https://token\.actions\.githubusercontent\.com$`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Issuer string `json:"issuer"`

	// subject matches the certificate's subject (its subject alternative name: an
	// e-mail address, or a URI such as a CI workflow's), e.g.
	// `^https://github\.com/org/repo/\.github/workflows/release\.yaml@refs/tags/v.*$`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Subject string `json:"subject"`
}

// HelmRepositoryStatus is the observed state of a HelmRepository.
type HelmRepositoryStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// artifact is the last index fetched: revision and digest are `sha256:<hex>` of it.
	// A failed poll keeps it.
	// +optional
	Artifact *Artifact `json:"artifact,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// HelmRepository follows a Helm chart repository (index.yaml or OCI registry).
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=helmrepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmRepositorySpec   `json:"spec,omitempty"`
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *HelmRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *HelmRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// GetInterval returns spec.interval, or its default when unset.
func (in *HelmRepository) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultHelmRepositoryInterval)
}

// GetTimeout returns spec.timeout, or its default when unset.
func (in *HelmRepository) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultHelmRepositoryTimeout)
}

// HelmRepositoryList is a list of HelmRepositories.
// +kubebuilder:object:root=true
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmRepository{}, &HelmRepositoryList{})
}
