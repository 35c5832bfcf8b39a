package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationSpec says what to build from which source and how to keep the cluster equal to it.
// +kubebuilder:validation:XValidation:rule="has(self.sourceRef) != has(self.sources)",message="exactly one of spec.sourceRef and spec.sources is required"
// +kubebuilder:validation:XValidation:rule="!has(self.sourceRef) || self.sourceRef.kind != 'HelmRepository' || (has(self.helm) && has(self.helm.chart) && size(self.helm.chart) > 0)",message="spec.helm.chart is required with a HelmRepository source"
// +kubebuilder:validation:XValidation:rule="!has(self.sources) || (!has(self.helm) && !has(self.postBuild) && (!has(self.path) || self.path == './'))",message="with spec.sources, path, helm and postBuild go on each source, not on the spec"
// +kubebuilder:validation:XValidation:rule="!has(self.sources) || !has(self.pinnedRevision)",message="spec.pinnedRevision is not supported with spec.sources: rollback of a multi-source Application is not supported"
type ApplicationSpec struct {
	// sourceRef names the GitRepository, OCIRepository or HelmRepository whose artifact
	// is built. Exactly one of sourceRef and sources is set.
	// +optional
	SourceRef SourceReference `json:"sourceRef,omitzero"`

	// sources are several sources rendered into one Application, in place of sourceRef
	// (exactly one of the two is set): each source is rendered on its own with the same
	// pipeline (its path, helm and postBuild; spec.decryption, patches, images and
	// commonMetadata apply to every source), and the objects are joined into one
	// inventory, one dry-run, one apply and one prune. An object (group, kind, namespace,
	// name) that two sources render fails the revision (BuildFailed, naming both). The
	// revision (status.lastAppliedRevision, history) lists every source's, as
	// `<Kind>/<name>@<revision>` joined by ";" in the order of the list.
	// spec.pinnedRevision (a rollback) is not supported with sources.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	Sources []ApplicationSource `json:"sources,omitempty"`

	// cluster names a Cluster (in the Application's namespace unless
	// cluster.namespace says otherwise, which gitsync run --allow-cross-namespace-refs
	// must allow) whose API server the Application renders for, applies to, prunes from
	// and watches. Unset: the cluster gitsync runs in.
	// +optional
	Cluster *ClusterReference `json:"cluster,omitempty"`

	// path inside the checkout to build: a kustomization, or a directory of YAML/JSON files.
	// +optional
	// +kubebuilder:default="./"
	Path string `json:"path,omitempty"`

	// targetNamespace is the namespace of namespaced objects that have none in Git.
	// Unset: the Application's own namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// interval of the safety resync (a full comparison with Git).
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// prune deletes objects that left Git (only those carrying this Application's labels).
	// +optional
	// +kubebuilder:default=false
	Prune bool `json:"prune,omitempty"`

	// pruneCRDs lets prune delete a CustomResourceDefinition that left Git while custom
	// resources of it still exist (they are deleted with it). Default false: such a
	// prune is refused (Ready=False, reason PruneRefused) and the CRD stays. CRDs that a
	// policy leaves out of a render (spec.helm.crds Create or Skip) are never pruned.
	// +optional
	// +kubebuilder:default=false
	PruneCRDs bool `json:"pruneCRDs,omitempty"`

	// allowEmpty lets a render with no objects prune everything. Default false.
	// +optional
	// +kubebuilder:default=false
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// selfHeal corrects drift at once; false reports drift in status.drift without correcting it.
	// +optional
	// +kubebuilder:default=true
	SelfHeal *bool `json:"selfHeal,omitempty"`

	// autoSync applies new revisions as they arrive; false leaves them OutOfSync (Ready
	// False, reason AwaitingSync) until the gitsync.dev/requested-at annotation changes.
	// +optional
	// +kubebuilder:default=true
	AutoSync *bool `json:"autoSync,omitempty"`

	// ignoreDifferences lists fields that are not compared for drift.
	// +optional
	IgnoreDifferences []IgnoreDifference `json:"ignoreDifferences,omitempty"`

	// wait makes Ready wait for every applied object to be healthy, up to timeout.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// timeout of an apply and, with wait, of the health check.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// dependsOn lists Applications that must be Ready before this one is applied.
	// +optional
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// force recreates objects whose immutable fields changed.
	// +optional
	Force bool `json:"force,omitempty"`

	// serviceAccountName, in the Application's namespace, is impersonated for every apply,
	// prune, drift correction and prune on deletion. When empty, the operator's
	// --default-service-account is impersonated if it is set (see status.serviceAccount);
	// otherwise the operator's own identity applies. A DNS-1123 subdomain, as service
	// account names are: nothing else can be impersonated through it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// helm renders the path as a Helm chart when it holds a Chart.yaml (values, release name).
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`

	// healthChecks judge the health of the kinds they name with CEL expressions, in
	// place of kstatus (which stays the default for every other kind).
	// +optional
	HealthChecks []HealthCheck `json:"healthChecks,omitempty"`

	// suspend stops all syncing and drift correction while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// pinnedRevision, when set, is the revision that is applied instead of the source's
	// current one (`<ref>@sha1:<40 hex>` as in status.history, or `sha1:<40 hex>`): new
	// commits are not applied, and drift correction holds this revision, until it is
	// cleared. `gitsync rollback app NAME --to REVISION` sets it, `gitsync resume app NAME`
	// clears it. A commit whose checkout is no longer in storage is fetched again.
	// +optional
	// +kubebuilder:validation:Pattern="^([^@]+@)?sha1:[0-9a-f]{40}$"
	PinnedRevision string `json:"pinnedRevision,omitempty"`

	// decryption decrypts the SOPS-encrypted documents of the render, and the
	// SOPS-encrypted files that kustomize and Helm (valuesFiles) read, with the keys in
	// a Secret.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// postBuild substitutes ${VAR} references in the rendered objects.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`

	// patches are strategic-merge or JSON 6902 patches applied to the rendered objects,
	// charts' included (Helm post-rendering without a binary).
	// +optional
	Patches []Patch `json:"patches,omitempty"`

	// images rewrite the container images of the rendered objects.
	// +optional
	Images []Image `json:"images,omitempty"`

	// commonMetadata adds labels and annotations to every rendered object.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// syncWindows say when new revisions are applied: outside every allow window (when
	// there is one) or inside any deny window, a new revision waits (Ready=False, reason
	// SyncWindowClosed) until the window's end. Drift of the applied revision is still
	// reported, and corrected as selfHeal says unless a window that holds revisions back
	// says selfHeal: false.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	SyncWindows []SyncWindow `json:"syncWindows,omitempty"`
}

// ApplicationSource is one source of spec.sources and what is rendered of it.
// +kubebuilder:validation:XValidation:rule="self.sourceRef.kind != 'HelmRepository' || (has(self.helm) && has(self.helm.chart) && size(self.helm.chart) > 0)",message="helm.chart is required with a HelmRepository source"
type ApplicationSource struct {
	// sourceRef names the GitRepository, OCIRepository or HelmRepository of this source.
	// +required
	SourceRef SourceReference `json:"sourceRef"`

	// path inside the source's artifact to build, as spec.path.
	// +optional
	// +kubebuilder:default="./"
	Path string `json:"path,omitempty"`

	// targetNamespace of this source's namespaced objects that have none in Git;
	// unset: spec.targetNamespace, else the Application's own namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// helm renders this source's path (or its HelmRepository's chart) as spec.helm does.
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`

	// postBuild substitutes ${VAR} references in this source's objects, as
	// spec.postBuild does.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`
}

// SourceReference names the source of an Application.
type SourceReference struct {
	// kind of the source: GitRepository or OCIRepository (manifests, a kustomization or
	// a chart at spec.path) or HelmRepository (spec.helm.chart from a chart repository).
	// +required
	// +kubebuilder:validation:Enum=GitRepository;HelmRepository;OCIRepository
	Kind string `json:"kind"`

	// name of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the source; default: the Application's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// DependencyReference names another Application.
type DependencyReference struct {
	// name of the Application.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the Application; default: this Application's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ClusterReference names a Cluster.
type ClusterReference struct {
	// name of the Cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// namespace of the Cluster; default: the Application's namespace. Another namespace
	// is refused (AccessDenied) unless gitsync run --allow-cross-namespace-refs.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// IgnoreDifference selects objects and the fields of them that drift detection ignores.
type IgnoreDifference struct {
	// group of the objects ("" for the core group).
	// +optional
	Group string `json:"group,omitempty"`

	// kind of the objects.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// name of the object; unset: every object of the kind.
	// +optional
	Name string `json:"name,omitempty"`

	// namespace of the object; unset: any namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// jsonPointers (RFC 6901) of the fields to ignore, e.g. /spec/replicas.
	// +required
	// +kubebuilder:validation:MinItems=1
	JSONPointers []string `json:"jsonPointers"`
}

// Application builds a path of a GitRepository's artifact and keeps the cluster equal to it.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gsapp
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.sync.status`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health.status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.syncWindow.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Pinned",type=string,JSONPath=`.spec.pinnedRevision`,priority=1
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApplicationSpec   `json:"spec,omitempty"`
	Status ApplicationStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Application) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Application) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns status.observedGeneration.
func (in *Application) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// GetInterval returns spec.interval, or its default when unset.
func (in *Application) GetInterval() metav1.Duration {
	return durationOr(in.Spec.Interval, DefaultApplicationInterval)
}

// GetTimeout returns spec.timeout, or its default when unset.
func (in *Application) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultApplicationTimeout)
}

// ApplicationList is a list of Applications.
// +kubebuilder:object:root=true
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Application `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Application{}, &ApplicationList{})
}
