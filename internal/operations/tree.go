package operations

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// Tree is app's inventory (on its cluster, with spec.cluster), one node per object sorted by kind then name, each with the
// health status.health gives it (CEL health checks included); children adds owned
// children (Deployment → ReplicaSet → Pod), and the hooks of the last run are included.
func Tree(ctx context.Context, c client.Client, app *gitsyncv1.Application, children bool) ([]*tree.Node, error) {
	c, _, err := OnItsCluster(ctx, c, app) // cluster.go: spec.cluster
	if err != nil {
		return nil, err
	}
	nodes, _, err := tree.Build(ctx, c, app, tree.Options{Children: children, Hooks: true})
	return nodes, err
}

// History is app's last syncs (status.history), newest first; never nil.
func History(app *gitsyncv1.Application) []gitsyncv1.SyncHistoryEntry {
	if app.Status.History == nil {
		return []gitsyncv1.SyncHistoryEntry{}
	}
	return app.Status.History
}
