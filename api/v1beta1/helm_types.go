package v1beta1

import "k8s.io/apimachinery/pkg/runtime"

// HelmSpec renders a Helm chart: the Application's path when it holds a Chart.yaml, or
// spec.helm.chart from a HelmRepository source.
type HelmSpec struct {
	// chart is the chart's name in the HelmRepository named by sourceRef (required with
	// such a source; unused with a GitRepository).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart,omitempty"`

	// version is a semver range (e.g. ">=6.0.0 <7.0.0"); the highest version it accepts
	// is rendered, and a newer matching version is applied like a new commit. Default:
	// the newest stable version.
	// +optional
	Version string `json:"version,omitempty"`

	// releaseName is .Release.Name (default: the Application's name).
	// +optional
	// +kubebuilder:validation:MaxLength=53
	ReleaseName string `json:"releaseName,omitempty"`

	// values are merged last, over valuesFiles and valuesFrom.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Values *runtime.RawExtension `json:"values,omitempty"`

	// valuesFiles are values files in the source, relative to the chart directory (with
	// a HelmRepository: files of the chart archive),
	// merged in order over the chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// valuesFilesFrom are values files kept in another source than the chart's (a
	// GitRepository in the Application's namespace), merged in order over valuesFiles and
	// under valuesFrom. The Application follows those sources too: a new commit of one
	// renders the chart again, and status.valuesRevisions and history record their
	// revisions.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ValuesFilesFrom []ValuesFileReference `json:"valuesFilesFrom,omitempty"`

	// valuesFrom are keys of ConfigMaps or Secrets in the Application's namespace,
	// merged in order over valuesFiles. They are read with the Application's identity.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// crds says what happens to the chart's crds/ folder: Create (default: create the
	// CRDs that do not exist, never update them), CreateReplace (create or update), Skip.
	// +optional
	// +kubebuilder:validation:Enum=Create;CreateReplace;Skip
	// +kubebuilder:default=Create
	CRDs string `json:"crds,omitempty"`
}

// ValuesFileReference is a values file in another source.
type ValuesFileReference struct {
	// sourceRef names the GitRepository, in the Application's namespace, that holds the file.
	// +required
	SourceRef ValuesSourceReference `json:"sourceRef"`

	// path of the file, relative to the root of the source's checkout.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path"`
}

// ValuesSourceReference names the source of a values file.
type ValuesSourceReference struct {
	// kind of the source: GitRepository.
	// +required
	// +kubebuilder:validation:Enum=GitRepository
	Kind string `json:"kind"`

	// name of the GitRepository.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Key is how the render names the source's checkout: "GitRepository/<name>".
func (in ValuesSourceReference) Key() string { return in.Kind + "/" + in.Name }

// ValuesReference names a key of a ConfigMap or Secret that holds Helm values.
type ValuesReference struct {
	// kind is ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`

	// name of the object, in the Application's namespace.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// key holding YAML values (default values.yaml).
	// +optional
	Key string `json:"key,omitempty"`

	// optional: a missing object or key is skipped instead of failing the sync.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// HelmCRDs policies.
const (
	HelmCRDsCreate        = "Create"
	HelmCRDsCreateReplace = "CreateReplace"
	HelmCRDsSkip          = "Skip"
)

// ValuesNotFoundReason: a valuesFrom reference (not optional) does not exist.
const ValuesNotFoundReason = "ValuesNotFound"
