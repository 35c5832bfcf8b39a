package operations

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Status is the summary of one Application or source, as `gitsync get` shows it.
type Status struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Sync      string `json:"sync,omitempty"`
	Health    string `json:"health,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Suspended bool   `json:"suspended,omitempty"`
	Pinned    string `json:"pinnedRevision,omitempty"`
	Drifted   int    `json:"driftedObjects,omitempty"`
	// Error says why the object could not be read (explain's dependencies and source).
	Error string `json:"error,omitempty"`
}

// StatusOf summarises an Application, GitRepository or HelmRepository.
func StatusOf(obj client.Object) Status {
	st := Status{Namespace: obj.GetNamespace(), Name: obj.GetName(), Ready: string(metav1.ConditionUnknown)}
	switch o := obj.(type) {
	case *gitsyncv1.Application:
		st.Kind, st.Suspended, st.Pinned = gitsyncv1.ApplicationKind, o.Spec.Suspend, o.Spec.PinnedRevision
		if o.Status.Sync != nil {
			st.Sync = o.Status.Sync.Status
		}
		if o.Status.Health != nil {
			st.Health = o.Status.Health.Status
		}
		st.Revision, st.Drifted = o.Status.LastAppliedRevision, len(o.Status.Drift)
	case *gitsyncv1.GitRepository:
		st.Kind, st.Suspended = gitsyncv1.GitRepositoryKind, o.Spec.Suspend
		if o.Status.Artifact != nil {
			st.Revision = o.Status.Artifact.Revision
		}
	case *gitsyncv1.HelmRepository:
		st.Kind, st.Suspended = gitsyncv1.HelmRepositoryKind, o.Spec.Suspend
		if o.Status.Artifact != nil {
			st.Revision = o.Status.Artifact.Revision
		}
	case *gitsyncv1.OCIRepository:
		st.Kind, st.Suspended = gitsyncv1.OCIRepositoryKind, o.Spec.Suspend
		if o.Status.Artifact != nil {
			st.Revision = o.Status.Artifact.Revision
		}
	}
	if c := Ready(obj); c != nil {
		st.Ready, st.Reason, st.Message = string(c.Status), c.Reason, c.Message
	}
	return st
}
