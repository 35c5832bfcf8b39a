package application

import (
	"context"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/applier"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// cluster is what app's render takes from the cluster, as its sync does: capabilities
// from discovery; valuesFrom, the decryption Secret and substituteFrom read (from its
// namespace only) and lookup served with the Application's identity;
// dependencies from the HelmRepositories of its namespace, kinds' scopes from the
// RESTMapper.
func (r *Reconciler) cluster(app *gitsyncv1.Application) *render.Cluster {
	c := &render.Cluster{Discovery: r.Discovery, IsNamespaced: r.isNamespaced}
	c.Dependencies = func(ctx context.Context, ch *chart.Chart) error {
		return r.chartDependencies(ctx, app, ch, 0)
	}
	// The Application's client (its identity), made once per render, on first use.
	var (
		once   sync.Once
		reader client.Client
		err    error
	)
	appClient := func() (client.Client, error) {
		once.Do(func() {
			var manager *apply.Manager
			if manager, err = r.Applier(app); err == nil {
				reader = manager.Client()
			}
		})
		return reader, err
	}
	c.Values = func(ctx context.Context, ref gitsyncv1.ValuesReference) (map[string]any, error) {
		cl, err := appClient()
		if err != nil {
			return nil, err
		}
		return render.ReadValuesFrom(ctx, cl, app.Namespace, ref)
	}
	c.Keys = func(ctx context.Context, name string) (decrypt.KeySource, error) {
		cl, err := appClient()
		if err != nil {
			return nil, err
		}
		return render.ReadKeys(ctx, cl, app.Namespace, name)
	}
	c.Variables = func(ctx context.Context, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
		cl, err := appClient()
		if err != nil {
			return nil, err
		}
		return render.ReadSubstituteFrom(ctx, cl, app.Namespace, ref)
	}
	if r.Config != nil {
		user := applier.Identity(app, r.DefaultServiceAccount)
		if user == applier.OperatorIdentity {
			user = ""
		}
		c.Lookup = r.lookups.Provider(r.Config, r.Mapper, user)
	}
	return c
}
