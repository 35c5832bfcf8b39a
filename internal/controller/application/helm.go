package application

import (
	"context"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/impersonate"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// cluster is what app's render takes from the cluster, as its sync does: capabilities
// from discovery; valuesFrom, the decryption Secret and substituteFrom read (from its
// namespace only) and lookup served with the Application's identity;
// dependencies from the HelmRepositories of its namespace, kinds' scopes from the
// RESTMapper.
func (r *Reconciler) cluster(app *gitsyncv1.Application) *render.Cluster {
	c := render.ClusterOf(app.Namespace, r.Mapper, func() (client.Client, error) {
		manager, err := r.localApplier(app) // references are read here, not on spec.cluster
		if err != nil {
			return nil, err
		}
		return manager.Client(), nil
	}, true)
	c.Discovery = r.Discovery
	c.Dependencies = func(ctx context.Context, ch *chart.Chart) error {
		return r.chartDependencies(ctx, app, ch, 0)
	}
	if r.Config != nil {
		user := impersonate.Identity(app, r.DefaultServiceAccount)
		if user == impersonate.OperatorIdentity {
			user = ""
		}
		c.Lookup = r.lookups.Provider(r.Config, r.Mapper, user)
	}
	r.onCluster(app, c) // cluster_step.go: spec.cluster's discovery and lookup
	return c
}
