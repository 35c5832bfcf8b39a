package v1beta1

// +gitsync:hubonly

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The generators of an ApplicationSet: each makes parameter sets its template turns into
// Applications.

// ApplicationSetGenerator is one generator: exactly one field is set.
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.gitDirectories), has(self.gitFiles), has(self.clusters), has(self.pullRequest), has(self.matrix), has(self.merge)].filter(x, x).size() == 1",message="exactly one generator per entry"
type ApplicationSetGenerator struct {
	ApplicationSetBaseGenerator `json:",inline"`

	// matrix makes every combination of the parameter sets of its two generators.
	// +optional
	Matrix *MatrixGenerator `json:"matrix,omitempty"`

	// merge merges the sets of its later generators into those of the first that agree on mergeKeys.
	// +optional
	Merge *MergeGenerator `json:"merge,omitempty"`
}

// ApplicationSetBaseGenerator holds the generators that combine in matrix and merge.
type ApplicationSetBaseGenerator struct {
	// list gives the parameter sets literally.
	// +optional
	List *ListGenerator `json:"list,omitempty"`

	// gitDirectories makes one set per directory of a GitRepository's checkout.
	// +optional
	GitDirectories *GitDirectoriesGenerator `json:"gitDirectories,omitempty"`

	// gitFiles makes one set per JSON or YAML file of a GitRepository's checkout.
	// +optional
	GitFiles *GitFilesGenerator `json:"gitFiles,omitempty"`

	// clusters makes one set per Cluster in the set's namespace.
	// +optional
	Clusters *ClustersGenerator `json:"clusters,omitempty"`

	// pullRequest makes one set per open pull request of a forge repository.
	// +optional
	PullRequest *PullRequestGenerator `json:"pullRequest,omitempty"`
}

// ListGenerator gives the parameter sets literally.
type ListGenerator struct {
	// elements are objects; nested keys are flattened with dots (`a.b`).
	// +required
	// +kubebuilder:validation:MaxItems=1000
	Elements []apiextensionsv1.JSON `json:"elements"`
}

// GitDirectoriesGenerator makes one parameter set per directory of a GitRepository's
// current artifact: path, path.basename, path.basenameNormalized, path[N].
type GitDirectoriesGenerator struct {
	// sourceRef names a GitRepository in the set's namespace.
	// +required
	SourceRef LocalObjectReference `json:"sourceRef"`

	// include are globs (`apps/*`, `**` spans directories) of the directories to take.
	// +required
	// +kubebuilder:validation:MinItems=1
	Include []string `json:"include"`

	// exclude are globs of directories to leave out.
	// +optional
	Exclude []string `json:"exclude,omitempty"`
}

// GitFilesGenerator makes one parameter set per JSON or YAML file (its keys flattened
// with dots) plus path, path.basename, path.filename.
type GitFilesGenerator struct {
	// sourceRef names a GitRepository in the set's namespace.
	// +required
	SourceRef LocalObjectReference `json:"sourceRef"`

	// path is a glob of the files to read.
	// +required
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
}

// ClustersGenerator makes one parameter set per Cluster: name, labels.<key>,
// kubernetesVersion.
type ClustersGenerator struct {
	// selector over the Clusters' labels; empty: all Clusters of the namespace.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`
}

// PullRequestGenerator makes one parameter set per open pull request (forks left out):
// number, branch, branch_slug, head_sha, head_short_sha, target_branch, labels.
type PullRequestGenerator struct {
	// providerRef names a Provider (github, gitlab, gitea) whose address and token are used.
	// +required
	ProviderRef LocalObjectReference `json:"providerRef"`

	// repository is owner/name on the forge.
	// +required
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository"`

	// labels the pull requests must all carry.
	// +optional
	Labels []string `json:"labels,omitempty"`
}

// MatrixGenerator makes every combination of its two generators' sets.
type MatrixGenerator struct {
	// generators: exactly two.
	// +required
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	Generators []ApplicationSetBaseGenerator `json:"generators"`
}

// MergeGenerator merges parameter sets that agree on mergeKeys: the first generator's
// sets are the base; a later set with the same mergeKeys values overrides their keys.
type MergeGenerator struct {
	// mergeKeys are the parameters whose values pair the sets.
	// +required
	// +kubebuilder:validation:MinItems=1
	MergeKeys []string `json:"mergeKeys"`

	// generators: the first is the base.
	// +required
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=5
	Generators []ApplicationSetBaseGenerator `json:"generators"`
}
