package v1beta1

// +gitsync:hubonly

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of an OCIRepository.
const (
	DefaultOCIRepositoryInterval = 5 * time.Minute
	DefaultOCIRepositoryTimeout  = 60 * time.Second
	// OCIRepositoryKind is the kind of an Application's OCIRepository source.
	OCIRepositoryKind = "OCIRepository"
	// FluxContentMediaType is the layer media type `flux push artifact` (and `gitsync
	// push artifact`) writes: a gzipped tarball of the directory pushed.
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// OCISourceAnnotation and OCIRevisionAnnotation are the manifest annotations of an
	// artifact's origin (Flux's layout): the URL of its source and its revision there.
	OCISourceAnnotation   = "org.opencontainers.image.source"
	OCIRevisionAnnotation = "org.opencontainers.image.revision"
)

// Reasons of an OCIRepository.
const (
	// LayerInvalidReason: the artifact has no layer of the selected media type, or its
	// content cannot be unpacked safely (a link out of the artifact, an absolute path,
	// a device file).
	LayerInvalidReason = "LayerInvalid"
)

// Layer operations of spec.layerSelector.
const (
	// OCILayerExtract unpacks the layer (a tar+gzip) into the artifact's directory.
	OCILayerExtract = "extract"
	// OCILayerCopy stores the layer as it is, as one file in the artifact's directory.
	OCILayerCopy = "copy"
)

// OCIRepositorySpec names an artifact in an OCI registry.
type OCIRepositorySpec struct {
	// url of the repository: oci://host[:port]/path, without a tag or digest.
	// +required
	// +kubebuilder:validation:Pattern=`^oci://[^@:/]+(:[0-9]+)?/[^:@]+$`
	URL string `json:"url"`

	// ref selects the artifact: a tag, the highest tag in a semver range, or a digest
	// (which wins over both). Unset: the tag `latest`.
	// +optional
	Ref *OCIRepositoryRef `json:"ref,omitempty"`

	// secretRef names a Secret of type kubernetes.io/dockerconfigjson in the same
	// namespace (key `.dockerconfigjson`) with the registry's credentials.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// interval between polls: a tag list (semver) and a HEAD of the manifest; nothing is
	// downloaded while the digest stays the same.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds one poll (and pull) of the registry.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// layerSelector picks the layer that holds the content; default: the first layer of
	// media type application/vnd.cncf.flux.content.v1.tar+gzip, extracted.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// verify checks the artifact's signature before anything of it is used.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// suspend stops polling while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// OCIRepositoryRef selects an artifact of the repository.
type OCIRepositoryRef struct {
	// tag of the artifact.
	// +optional
	Tag string `json:"tag,omitempty"`

	// semver is a range (Masterminds/semver); the highest tag in it is used.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// digest (sha256:<hex>) of the artifact's manifest; wins over tag and semver.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	Digest string `json:"digest,omitempty"`
}

// OCILayerSelector picks a layer of the artifact and what to do with it.
type OCILayerSelector struct {
	// mediaType of the layer; default application/vnd.cncf.flux.content.v1.tar+gzip.
	// +optional
	MediaType string `json:"mediaType,omitempty"`

	// operation: extract (default) unpacks a tar+gzip layer; copy stores it as one file.
	// +optional
	// +kubebuilder:validation:Enum=extract;copy
	Operation string `json:"operation,omitempty"`
}

// OCIRepositoryVerification says how an artifact's signature is checked.
// +kubebuilder:validation:XValidation:rule="!has(self.matchOIDCIdentity) || self.provider == 'cosign'",message="matchOIDCIdentity is for provider cosign (keyless)"
type OCIRepositoryVerification struct {
	// provider of the signature.
	// +required
	// +kubebuilder:validation:Enum=cosign;notation
	Provider string `json:"provider"`

	// secretRef names a Secret in the same namespace with what is trusted. For `cosign`:
	// PEM public keys (`cosign.pub`; signatures by the key pair, in cosign's classic
	// `sha256-<hex>.sig` layout or as Sigstore bundles attached as referrers, their
	// transparency log entries not checked), or the key `trusted_root.json` (keyless: a
	// Sigstore TrustedRoot JSON with the Fulcio CA chains, Rekor and CT log keys and
	// timestamp authorities of a private Sigstore; Sigstore bundles, or classic-layout
	// signatures with their certificate and Rekor bundle, each checked against that root
	// and matchOIDCIdentity; nothing is fetched from the public Sigstore instance). For
	// `notation`: PEM CA certificates.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// matchOIDCIdentity lists the OIDC identities a keyless signature may carry: at least
	// one must match the signing certificate's issuer and subject. Required with a
	// trusted root (keyless); refused with public keys.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OCIArtifact is the artifact an OCIRepository last pulled.
type OCIArtifact struct {
	// revision is `<tag>@sha256:<hex>` (`sha256:<hex>` for a digest ref), as Flux writes it.
	// +required
	Revision string `json:"revision"`

	// digest is `sha256:<hex>` of the artifact's manifest.
	// +required
	Digest string `json:"digest"`

	// url is the reference pulled: host/path:tag or host/path@digest.
	// +required
	URL string `json:"url"`

	// metadata holds the manifest's annotations of the artifact's origin
	// (org.opencontainers.image.source and .revision).
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`

	// signer is the verified signer of the artifact (with spec.verify).
	// +optional
	Signer string `json:"signer,omitempty"`

	// verificationSecretVersion is the resourceVersion of spec.verify.secretRef's Secret
	// that signer was verified with: while it and the digest stay the same, a poll does
	// not verify again; a change of the Secret (new keys, a new trusted root) verifies the
	// artifact again.
	// +optional
	VerificationSecretVersion string `json:"verificationSecretVersion,omitempty"`

	// lastUpdateTime is when the artifact last changed.
	// +required
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`
}

// OCIRepositoryStatus is the observed state of an OCIRepository.
type OCIRepositoryStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// artifact is the last artifact pulled and unpacked. A failed poll keeps it.
	// +optional
	Artifact *OCIArtifact `json:"artifact,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// OCIRepository follows an artifact in an OCI registry (what `flux push artifact` or
// `gitsync push artifact` pushed); Applications render its content like a Git checkout.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ocirepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.artifact.revision`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   OCIRepositorySpec   `json:"spec,omitempty"`
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *OCIRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *OCIRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *OCIRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// GetInterval returns spec.interval, or its default when unset.
func (in *OCIRepository) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultOCIRepositoryInterval)
}

// GetTimeout returns spec.timeout, or its default when unset.
func (in *OCIRepository) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultOCIRepositoryTimeout)
}

// LayerMediaType is spec.layerSelector.mediaType, defaulted to Flux's content type.
func (in *OCIRepository) LayerMediaType() string {
	if s := in.Spec.LayerSelector; s != nil && s.MediaType != "" {
		return s.MediaType
	}
	return FluxContentMediaType
}

// LayerOperation is spec.layerSelector.operation, defaulted to extract.
func (in *OCIRepository) LayerOperation() string {
	if s := in.Spec.LayerSelector; s != nil && s.Operation != "" {
		return s.Operation
	}
	return OCILayerExtract
}

// OCIRepositoryList is a list of OCIRepositories.
// +kubebuilder:object:root=true
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&OCIRepository{}, &OCIRepositoryList{})
}
