package operations

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery/cached/memory"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/cluster"
	"github.com/gitsync-dev/gitsync/internal/render"
)

// OnItsCluster returns the client of the cluster app syncs to: c itself without
// spec.cluster; with it, a client of that Cluster's API server made from its kubeconfig
// Secret, read with c (so the person needs get on the Cluster and that Secret), acting
// as the identity the sync uses there (see cluster.Target.User).
func OnItsCluster(ctx context.Context, c client.Client, app *gitsyncv1.Application) (client.Client, *cluster.Target, error) {
	ref := app.Spec.Cluster
	if ref == nil {
		return c, nil, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	cl := &gitsyncv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cl); err != nil {
		return nil, nil, fmt.Errorf("reading Cluster %s/%s of Application %s/%s: %w", ns, ref.Name, app.Namespace, app.Name, err)
	}
	clients := &cluster.Clients{Reader: c, Scheme: c.Scheme()}
	t, err := clients.Get(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	remote, err := t.Client(t.User(app.Namespace, app.Spec.ServiceAccountName))
	if err != nil {
		return nil, nil, err
	}
	return remote, t, nil
}

// onClusterRender points a person's render of a remote Application at its cluster:
// kinds' scopes and capabilities from there (valuesFrom and the other references stay
// read here, as the sync reads them).
func onClusterRender(rc *render.Cluster, t *cluster.Target) {
	if rc == nil || t == nil {
		return
	}
	rc.IsNamespaced = render.ScopeFrom(t.Mapper)
	rc.Discovery = memory.NewMemCacheClient(t.Discovery)
	if rc.Lookup != nil {
		rc.Lookup = (&render.LookupClients{}).Provider(t.Config, t.Mapper, "")
	}
}
