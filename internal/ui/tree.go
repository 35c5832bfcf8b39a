package ui

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// Node is one object of an application's resource tree (internal/tree).
type Node = tree.Node

// readTimeout bounds the wait for a kind's informer the first time it is read.
const readTimeout = 10 * time.Second

// tree is the application's resource tree (internal/tree, the one `gitsync tree` shows)
// read as the request's caller may (objectReader): the inventory with each object's owned
// children below it, the hooks of the last run, and the number of nodes.
func (s *Server) tree(ctx context.Context, app *gitsyncv1.Application) ([]*Node, int, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	reader, err := s.objectReader(ctx, app)
	if err != nil {
		return nil, 0, err
	}
	return tree.Build(ctx, reader, app, tree.Options{Children: true, Hooks: true})
}

// objectReader reads the objects of app: the cache as the caller may (callerReader)
// for an Application of this cluster; for one with spec.cluster, that Cluster's API
// server (operations.OnItsCluster, as the sync's identity there) once the caller may get
// the Cluster and its kubeconfig Secret, as `gitsync tree` would need.
func (s *Server) objectReader(ctx context.Context, app *gitsyncv1.Application) (client.Reader, error) {
	ref := app.Spec.Cluster
	if ref == nil {
		return callerReader{s: s, who: callerOf(ctx)}, nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	who := callerOf(ctx)
	if !s.mayGet(ctx, who, gitsyncv1.GroupVersion.WithKind(gitsyncv1.ClusterKind), ns, ref.Name) {
		return nil, fmt.Errorf("you may not get Cluster %s/%s: %w", ns, ref.Name, errForbidden)
	}
	cl := &gitsyncv1.Cluster{}
	if err := s.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cl); err != nil {
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", ns, ref.Name, err)
	}
	if secret := cl.Spec.KubeConfig.SecretRef.Name; !s.mayGet(ctx, who, corev1.SchemeGroupVersion.WithKind("Secret"), ns, secret) {
		return nil, fmt.Errorf("you may not get the kubeconfig Secret of Cluster %s/%s: %w", ns, ref.Name, errForbidden)
	}
	remote, _, err := operations.OnItsCluster(ctx, s.direct, app)
	if err != nil {
		return nil, err
	}
	return remote, nil
}

// clusterOf is "namespace/name" of the Cluster app syncs to; empty for this cluster.
func clusterOf(app *gitsyncv1.Application) string {
	ref := app.Spec.Cluster
	if ref == nil {
		return ""
	}
	ns := ref.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	return ns + "/" + ref.Name
}
