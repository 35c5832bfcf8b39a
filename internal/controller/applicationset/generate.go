package applicationset

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// generate runs the set's generators and template: the Applications it wants.
func (r *Reconciler) generate(ctx context.Context, set *gitsyncv1.ApplicationSet) ([]*gitsyncv1.Application, error) {
	in := appset.Inputs{Checkout: func(name string) (string, error) { return r.checkout(ctx, set.Namespace, name) }, Memo: r.memo.get}
	if usesClusters(set.Spec.Generators) {
		list := &gitsyncv1.ClusterList{}
		if err := r.List(ctx, list, client.InNamespace(set.Namespace)); err != nil {
			return nil, fmt.Errorf("listing Clusters: %w", err)
		}
		in.Clusters = list.Items
	}
	if r.PullRequests != nil {
		in.PullRequests = func(ctx context.Context, gen *gitsyncv1.PullRequestGenerator) ([]appset.Params, error) {
			return r.PullRequests(ctx, set, gen)
		}
	}
	sets, err := appset.Generate(ctx, set.Spec.Generators, in)
	if err != nil {
		return nil, err
	}
	return appset.Applications(set, sets)
}

// checkout is the directory of the current artifact of the GitRepository name (in ns).
func (r *Reconciler) checkout(ctx context.Context, ns, name string) (string, error) {
	repo := &gitsyncv1.GitRepository{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, repo); err != nil {
		return "", fmt.Errorf("GitRepository %s: %w", name, err)
	}
	commit := source.CommitOf(revisionOf(repo))
	if commit == "" {
		return "", fmt.Errorf("GitRepository %s has no artifact yet", name)
	}
	if r.Storage == nil {
		return "", fmt.Errorf("GitRepository %s: no storage to read checkouts from", name)
	}
	dir := sourceid.CheckoutDir(r.Storage, repo, commit)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("GitRepository %s: the checkout of %s is not in storage", name, commit)
	}
	return dir, nil
}

func usesClusters(gens []gitsyncv1.ApplicationSetGenerator) bool {
	base := func(b []gitsyncv1.ApplicationSetBaseGenerator) bool {
		for _, g := range b {
			if g.Clusters != nil {
				return true
			}
		}
		return false
	}
	for _, g := range gens {
		if g.Clusters != nil || (g.Matrix != nil && base(g.Matrix.Generators)) || (g.Merge != nil && base(g.Merge.Generators)) {
			return true
		}
	}
	return false
}

// listGenerated reads the Applications carrying the set's label, fresh from the API server.
func (r *Reconciler) listGenerated(ctx context.Context, set *gitsyncv1.ApplicationSet) ([]gitsyncv1.Application, error) {
	list := &gitsyncv1.ApplicationList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(set.Namespace),
		client.MatchingLabels{gitsyncv1.ApplicationSetLabel: set.Name}); err != nil {
		return nil, fmt.Errorf("listing the generated Applications: %w", err)
	}
	return list.Items, nil
}
