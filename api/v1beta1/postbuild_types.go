package v1beta1

// Annotations that switch post-build steps off for one object.
const (
	// SubstituteAnnotation set to SubstituteDisabledValue on an object leaves its
	// ${VAR} references alone during post-build substitution.
	SubstituteAnnotation = "gitsync.dev/substitute"
	// FluxSubstituteAnnotation is Flux's annotation with the same meaning as
	// SubstituteAnnotation, honoured so Flux users' files carry over.
	FluxSubstituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"
	// SubstituteDisabledValue is the value of SubstituteAnnotation (or
	// FluxSubstituteAnnotation) that disables substitution.
	SubstituteDisabledValue = "disabled"
)

// DecryptionProviderSOPS is the only decryption provider: Mozilla SOPS with age and
// OpenPGP keys.
const DecryptionProviderSOPS = "sops"

// Decryption says how SOPS-encrypted documents and files of a render are decrypted.
type Decryption struct {
	// provider of the decryption; only "sops".
	// +required
	// +kubebuilder:validation:Enum=sops
	Provider string `json:"provider"`

	// secretRef names a Secret in the Application's namespace whose data holds the
	// private keys: keys ending in ".agekey" (age identities, one or more lines) and
	// ".asc" (ASCII-armored OpenPGP private keys). It is read with the Application's
	// identity.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
}

// PostBuild holds the variables substituted into the rendered objects.
type PostBuild struct {
	// substitute maps variable names to values for ${VAR} references in the rendered
	// objects. Its values win over those of substituteFrom.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// substituteFrom lists ConfigMaps and Secrets, in the Application's namespace, whose
	// data are variables; a later entry's value wins over an earlier one's. Values read
	// from a Secret are treated as secret wherever they land.
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret of substitution variables.
type SubstituteReference struct {
	// kind of the referent: ConfigMap or Secret.
	// +required
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`

	// name of the referent, in the Application's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// optional lets the sync go on without this referent's variables when it does not
	// exist. Default false: a missing referent fails the sync.
	// +optional
	// +kubebuilder:default=false
	Optional bool `json:"optional,omitempty"`
}

// Patch is a strategic-merge or JSON 6902 patch applied to the rendered objects that
// its target selects.
type Patch struct {
	// patch is the patch document: a strategic-merge patch (YAML of a partial object)
	// or a JSON 6902 patch (a YAML or JSON list of operations); the kind is detected.
	// +required
	// +kubebuilder:validation:MinLength=1
	Patch string `json:"patch"`

	// target selects the objects to patch. Unset: a strategic-merge patch applies to
	// the object its own apiVersion, kind, name and namespace name; a JSON 6902 patch
	// needs a target.
	// +optional
	Target *PatchSelector `json:"target,omitempty"`
}

// PatchSelector selects rendered objects; every field that is set must match. As in
// kustomize, group, version, kind, name and namespace are regular expressions that
// must match the whole value.
type PatchSelector struct {
	// group of the objects' API version.
	// +optional
	Group string `json:"group,omitempty"`

	// version of the objects' API version.
	// +optional
	Version string `json:"version,omitempty"`

	// kind of the objects.
	// +optional
	Kind string `json:"kind,omitempty"`

	// name of the objects.
	// +optional
	Name string `json:"name,omitempty"`

	// namespace of the objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// labelSelector is a label selector (e.g. "app=web,tier!=db") the objects' labels match.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`

	// annotationSelector is a label selector the objects' annotations match.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Image rewrites the container images (containers and initContainers) of the rendered
// objects whose image name is name.
type Image struct {
	// name of the image to rewrite, without tag or digest (e.g. "ghcr.io/org/app").
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// newName replaces the image name.
	// +optional
	NewName string `json:"newName,omitempty"`

	// newTag replaces the image tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`

	// digest replaces the tag with a digest ("sha256:..."); it wins over newTag.
	// +optional
	// +kubebuilder:validation:Pattern="^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"
	Digest string `json:"digest,omitempty"`
}

// CommonMetadata is added to every rendered object.
type CommonMetadata struct {
	// labels added to every object (they win over the object's own).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations added to every object (they win over the object's own).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
