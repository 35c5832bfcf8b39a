package apply

import (
	"context"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// HealthCheck judges an object of a kind it knows (handled true), in place of kstatus:
// it returns one of the HealthStatus constants and a message.
type HealthCheck func(obj *unstructured.Unstructured) (health, message string, handled bool)

// SetHealthCheck makes Health, HealthAfterApply and Wait judge the kinds for which
// handles is true with check (they are read even when kstatus needs no read).
func (m *Manager) SetHealthCheck(handles func(schema.GroupVersionKind) bool, check HealthCheck) {
	m.healthHandles, m.healthCheck = handles, check
}

// HealthyOnceApplied tells whether an object of gvk just applied is Healthy without a
// read: kinds without status, unless a health check judges them.
func (m *Manager) HealthyOnceApplied(gvk schema.GroupVersionKind) bool {
	return statusless[gvk.GroupKind()] && (m.healthHandles == nil || !m.healthHandles(gvk))
}

// Client is the client the Manager writes with (the Application's identity).
func (m *Manager) Client() client.Client { return m.client }

// DryRun checks objs as Apply would before writing (owner conflicts, then a server-side
// dry-run of every object) and writes nothing. Objects whose kind or namespace is
// defined by the same set are skipped when the definition does not exist yet: they are
// dry-run again when Apply reaches them.
func (m *Manager) DryRun(ctx context.Context, objs []*unstructured.Unstructured, opts Options) error {
	set := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		set[i] = o.DeepCopy()
		m.owner.setLabels(set[i])
	}
	if _, err := m.checkOwners(ctx, set, entryIDs(opts.Previous), nil, opts.OwnerReleased); err != nil {
		return err
	}
	_, err := m.dryRunAll(ctx, set, definitionsOf(set), opts.Force)
	return err
}

// ObjectHealth is the health of one object as read from the cluster: the Manager's
// HealthCheck when it knows the kind, kstatus otherwise.
func (m *Manager) ObjectHealth(obj *unstructured.Unstructured) (health, message string) {
	s, msg := m.objectStatus(obj)
	return healthOf(s), msg
}

// KstatusHealth is the health of one object as read from the cluster, by kstatus alone
// (Manager.ObjectHealth also asks the Application's health checks).
func KstatusHealth(obj *unstructured.Unstructured) (health, message string) {
	res, err := status.Compute(obj)
	if err != nil {
		return gitsyncv1.HealthStatusUnknown, err.Error()
	}
	return healthOf(res.Status), res.Message
}

// objectStatus is the kstatus of obj, or what the HealthCheck says mapped to one.
func (m *Manager) objectStatus(obj *unstructured.Unstructured) (status.Status, string) {
	if m.healthCheck != nil {
		if h, msg, ok := m.healthCheck(obj); ok {
			switch h {
			case gitsyncv1.HealthStatusHealthy:
				return status.CurrentStatus, msg
			case gitsyncv1.HealthStatusDegraded:
				return status.FailedStatus, msg
			case gitsyncv1.HealthStatusProgressing:
				return status.InProgressStatus, msg
			default:
				return status.UnknownStatus, msg
			}
		}
	}
	res, err := status.Compute(obj)
	if err != nil {
		return status.UnknownStatus, err.Error()
	}
	return res.Status, res.Message
}
