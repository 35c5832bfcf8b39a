package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
	_, err := m.dryRunAll(ctx, set, definitionsOf(set), opts.Force, nil)
	return err
}
