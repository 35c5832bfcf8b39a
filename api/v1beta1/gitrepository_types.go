package v1beta1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults that apply when a field is unset (the CRD sets them too; these cover objects
// built in code).
const (
	DefaultGitRepositoryInterval = time.Minute
	DefaultGitRepositoryTimeout  = 60 * time.Second
	DefaultApplicationInterval   = 10 * time.Minute
	DefaultApplicationTimeout    = 5 * time.Minute
)

// DefaultGitRepositoryMaxSize is spec.maxSize when unset.
var DefaultGitRepositoryMaxSize = resource.MustParse("500Mi")

// GitRepositorySpec says which Git repository and ref to follow.
// +kubebuilder:validation:XValidation:rule="[has(self.ref) && has(self.ref.branch), has(self.ref) && has(self.ref.tag), has(self.ref) && has(self.ref.semver)].filter(x, x).size() <= 1",message="at most one of ref.branch, ref.tag and ref.semver may be set"
type GitRepositorySpec struct {
	// url of the repository: https://, http://, ssh://, scp-like git@host:path, or file://.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^(https?://|ssh://|file://|[A-Za-z0-9._-]+@[^:/]+:).+`
	URL string `json:"url"`

	// ref selects the branch, tag, semver range or commit to check out.
	// None: the remote's default branch.
	// +optional
	Ref *GitRepositoryRef `json:"ref,omitempty"`

	// interval between polls of the remote (ls-remote; a fetch only when the commit moved).
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds every remote call (listing refs, fetching).
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// maxSize caps the bytes fetched from the remote at once: the pack of a new commit,
	// or a pinned commit's history when the server cannot send that commit alone.
	// A quantity, default `500Mi`; `0` means no limit. Past it the fetch stops with
	// Ready=False and Stalled (reason TooLarge) until the spec changes or a
	// reconcile is requested.
	// +optional
	// +kubebuilder:default="500Mi"
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`

	// secretRef names a Secret in the same namespace with the credentials:
	// username + password (HTTP basic), bearerToken (HTTP bearer),
	// identity + known_hosts (SSH key with strict host key checking), ca.crt (custom CA).
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// webhookSecretRef names a Secret in the same namespace whose key `token` is the
	// HMAC secret that webhook deliveries for this repository must be signed with.
	// Without it, webhooks never wake this repository.
	// +optional
	WebhookSecretRef *LocalObjectReference `json:"webhookSecretRef,omitempty"`

	// ignore holds gitignore lines; matching paths are left out of the artifact and its digest.
	// +optional
	Ignore string `json:"ignore,omitempty"`

	// suspend stops polling while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// verify requires signatures on what is checked out: a commit or tag that is not
	// signed by one of the Secret's keys is never published (Ready=False, reason
	// VerificationFailed; the previous artifact stays).
	// +optional
	Verify *GitRepositoryVerification `json:"verify,omitempty"`

	// preview, when set, makes every pull (merge) request webhook of this repository
	// that targets one of targetBranches show, in one comment on the pull request, what
	// the head commit would change in the cluster for each Application of this source
	// (a server-side dry-run with the Application's identity; nothing is written), and
	// set the commit status gitsync/preview on the head commit.
	// +optional
	Preview *GitRepositoryPreview `json:"preview,omitempty"`
}

// GitRepositoryPreview configures pull-request previews (plan before merge).
type GitRepositoryPreview struct {
	// providerRef names a Provider (type github, gitlab or gitea) in the same namespace:
	// its address and its Secret's token are used to comment and set commit statuses.
	// +required
	ProviderRef LocalObjectReference `json:"providerRef"`

	// targetBranches are the base branches whose pull requests are previewed (default:
	// the branch spec.ref follows; any branch when it follows none).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	TargetBranches []string `json:"targetBranches,omitempty"`

	// forks allows previews of pull requests whose head is in another repository (a
	// fork). Off by default: a fork's author is often not trusted with a render.
	// +optional
	Forks bool `json:"forks,omitempty"`
}

// GitRepositoryVerification says which Git objects must be signed, and by whom.
type GitRepositoryVerification struct {
	// mode: `HEAD` verifies the commit checked out, `Tag` the annotated tag that
	// spec.ref.tag or spec.ref.semver selected, `TagAndHEAD` both.
	// +optional
	// +kubebuilder:default=HEAD
	// +kubebuilder:validation:Enum=HEAD;Tag;TagAndHEAD
	Mode string `json:"mode,omitempty"`

	// secretRef names a Secret in the same namespace whose values are armored OpenPGP
	// public keys and/or lines of an SSH allowed_signers file (as git's
	// gpg.ssh.allowedSignersFile takes them).
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
}

// Verification modes of a GitRepository.
const (
	VerifyModeHEAD       = "HEAD"
	VerifyModeTag        = "Tag"
	VerifyModeTagAndHEAD = "TagAndHEAD"
)

// GitRepositoryRef selects what to check out. At most one of branch, tag and semver;
// commit may be combined with branch.
type GitRepositoryRef struct {
	// branch to follow.
	// +optional
	Branch string `json:"branch,omitempty"`

	// tag to check out.
	// +optional
	Tag string `json:"tag,omitempty"`

	// semver range; the highest tag that matches is checked out.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// commit SHA-1 to check out (40 hex).
	// +optional
	// +kubebuilder:validation:Pattern="^[0-9a-f]{40}$"
	Commit string `json:"commit,omitempty"`
}

// Artifact describes the checked-out content of one revision.
type Artifact struct {
	// revision is `<branch|tag>@sha1:<40 hex>` (or `sha1:<40 hex>` for a bare commit ref).
	// +required
	Revision string `json:"revision"`

	// digest is `sha256:<hex>` of the checked-out content (ignored paths excluded).
	// +required
	Digest string `json:"digest"`

	// lastUpdateTime is when the artifact last changed.
	// +required
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// signer is who signed the revision, when spec.verify is set: `<scheme>:<key
	// fingerprint>` followed by ` (<identity>)` when the keys name one (an OpenPGP user
	// ID, an SSH allowed_signers principal); signers of a tag and its commit are joined
	// with ", ".
	// +optional
	Signer string `json:"signer,omitempty"`
}

// GitRepositoryStatus is the observed state of a GitRepository.
type GitRepositoryStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// artifact is the last successful checkout. A failed poll keeps it.
	// +optional
	Artifact *Artifact `json:"artifact,omitempty"`

	ReconcileRequestStatus `json:",inline"`
}

// GitRepository follows a Git repository and checks out the selected ref.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitrepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.artifact.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitRepositorySpec   `json:"spec,omitempty"`
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *GitRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *GitRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *GitRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// GetInterval returns spec.interval, or its default when unset.
func (in *GitRepository) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultGitRepositoryInterval)
}

// GetTimeout returns spec.timeout, or its default when unset.
func (in *GitRepository) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultGitRepositoryTimeout)
}

// GitRepositoryList is a list of GitRepositories.
// +kubebuilder:object:root=true
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GitRepository{}, &GitRepositoryList{})
}
