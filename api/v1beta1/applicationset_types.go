package v1beta1

// +gitsync:hubonly

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ApplicationSet labels, annotations, kinds and values.
const (
	// ApplicationSetKind is the kind of an ApplicationSet.
	ApplicationSetKind = "ApplicationSet"
	// ApplicationSetLabel names the ApplicationSet that generated an Application.
	ApplicationSetLabel = "gitsync.dev/applicationset"
	// ApplicationSetFieldManager is the field manager of the applies of generated Applications.
	ApplicationSetFieldManager = "gitsync-applicationset"
	// ResumeRolloutAnnotation set to a new value on an ApplicationSet continues a halted
	// rollout (`gitsync resume appset NAME`).
	ResumeRolloutAnnotation = "gitsync.dev/resume-rollout"
	// RollingSyncStrategy is the one spec.strategy.type.
	RollingSyncStrategy = "RollingSync"
	// MaxGeneratedApplications bounds the Applications one ApplicationSet may generate.
	MaxGeneratedApplications = 1000

	// RolloutHaltedReason: a step's Application failed or did not become healthy in time.
	RolloutHaltedReason = "RolloutHalted"
	// RolloutProgressingReason: a rollout is under way.
	RolloutProgressingReason = "RolloutProgressing"
	// RolledBackReason: spec.rollback pins every generated Application.
	RolledBackReason = "RolledBack"
	// GenerateFailedReason: a generator or the template failed.
	GenerateFailedReason = "GenerateFailed"
	// ApplicationsNotReadyReason: generated Applications are Ready=False; the message
	// says how many and names the first few, with their reasons.
	ApplicationsNotReadyReason = "ApplicationsNotReady"
)

// Rollout states of a step and of an Application in it.
const (
	StepPending     = "Pending"
	StepProgressing = "Progressing"
	StepCompleted   = "Completed"
	StepHalted      = "Halted"

	RolloutAppWaiting  = "Waiting"
	RolloutAppUpdating = "Updating"
	RolloutAppDone     = "Done"
	RolloutAppFailed   = "Failed"
)

// ApplicationSetSpec says which Applications to generate and how a new revision reaches them.
type ApplicationSetSpec struct {
	// generators make parameter sets; each set makes one Application from the template.
	// The sets of several generators are concatenated.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	Generators []ApplicationSetGenerator `json:"generators"`

	// template is the Application made for each parameter set: every string in it is a
	// Go template (`{{ .param }}`; a missing key is an error).
	// +required
	Template ApplicationSetTemplate `json:"template"`

	// preserveOnDeletion keeps (orphans) an Application whose parameter set went away or
	// whose ApplicationSet is deleted, instead of deleting it.
	// +optional
	PreserveOnDeletion bool `json:"preserveOnDeletion,omitempty"`

	// strategy, when set, rolls a new source revision out step by step.
	// +optional
	Strategy *ApplicationSetStrategy `json:"strategy,omitempty"`

	// rollback, when set, pins every generated Application to this revision (spec.pinnedRevision);
	// `gitsync rollback appset NAME --to REVISION` sets it. Clear it to roll forward again.
	// +optional
	Rollback string `json:"rollback,omitempty"`

	// interval at which the generators run again (sources and Clusters also wake the set).
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// suspend stops generating and rolling out.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ApplicationSetTemplate is the Application made for each parameter set.
type ApplicationSetTemplate struct {
	// metadata of the Application: name (required, templated), labels, annotations.
	// +required
	Metadata ApplicationSetTemplateMeta `json:"metadata"`

	// spec of the Application.
	// +required
	Spec ApplicationSpec `json:"spec"`
}

// ApplicationSetTemplateMeta is the templated metadata of a generated Application.
type ApplicationSetTemplateMeta struct {
	// name of the Application, e.g. `{{ .path.basename }}-{{ .name }}`.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// labels of the Application.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations of the Application.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ApplicationSetStrategy says how a new revision reaches the generated Applications.
type ApplicationSetStrategy struct {
	// type is RollingSync.
	// +required
	// +kubebuilder:validation:Enum=RollingSync
	Type string `json:"type"`

	// steps in order; an Application belongs to the first step whose selector matches it
	// (Applications no step matches form a last step of their own).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Steps []RollingSyncStep `json:"steps"`

	// healthTimeout halts the rollout when a step's Applications are not all Synced and
	// Healthy at the new revision within it.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
}

// RollingSyncStep is one step of a rollout.
type RollingSyncStep struct {
	// selector over the generated Applications' labels.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// maxUpdate bounds how many of the step's Applications update at once: a number or a
	// percentage of the step (rounded up); unset: all.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUpdate *intstr.IntOrString `json:"maxUpdate,omitempty"`
}

// ApplicationSetStatus is the observed state of an ApplicationSet.
type ApplicationSetStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the Applications are generated and, with a strategy, the rollout
	// is complete), Reconciling.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// applications are the names of the generated Applications.
	// +optional
	Applications []string `json:"applications,omitempty"`

	// rollout is the state of the RollingSync rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// lastHandledResumeAt is the last gitsync.dev/resume-rollout value handled.
	// +optional
	LastHandledResumeAt string `json:"lastHandledResumeAt,omitempty"`
}

// RolloutStatus is the state of a rollout.
type RolloutStatus struct {
	// revision being rolled out.
	// +optional
	Revision string `json:"revision,omitempty"`

	// currentStep is the index of the step under way (len(steps) when complete).
	CurrentStep int32 `json:"currentStep"`

	// stepStartedAt is when the current step started (or was resumed).
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`

	// halted names the Application (and why) that halted the rollout.
	// +optional
	Halted string `json:"halted,omitempty"`

	// steps with their Applications.
	// +optional
	Steps []RolloutStep `json:"steps,omitempty"`
}

// RolloutStep is one step's state.
type RolloutStep struct {
	// state is Pending, Progressing, Completed or Halted.
	State string `json:"state"`

	// applications of the step.
	// +optional
	Applications []RolloutApplication `json:"applications,omitempty"`
}

// RolloutApplication is one Application's state in a rollout.
type RolloutApplication struct {
	// name of the Application.
	Name string `json:"name"`

	// status is Waiting, Updating, Done or Failed.
	Status string `json:"status"`
}

// ApplicationSet generates Applications from a template and parameter sets, and rolls a
// new revision out to them.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gsappset
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Step",type=integer,JSONPath=`.status.rollout.currentStep`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.rollout.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type ApplicationSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ApplicationSetSpec   `json:"spec,omitempty"`
	Status ApplicationSetStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *ApplicationSet) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ApplicationSet) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetInterval returns spec.interval, or 5m.
func (in *ApplicationSet) GetInterval() metav1.Duration {
	if in.Spec.Interval != nil && in.Spec.Interval.Duration > 0 {
		return *in.Spec.Interval
	}
	return metav1.Duration{Duration: 5 * time.Minute}
}

// PendingResume is the gitsync.dev/resume-rollout value not handled yet, else "".
func (in *ApplicationSet) PendingResume() string {
	v := in.GetAnnotations()[ResumeRolloutAnnotation]
	if v == in.Status.LastHandledResumeAt {
		return ""
	}
	return v
}

// ApplicationSetList is a list of ApplicationSets.
// +kubebuilder:object:root=true
type ApplicationSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ApplicationSet{}, &ApplicationSetList{})
}
