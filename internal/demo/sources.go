package demo

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// mixedFiles are the Git half of the Application mixed: YAML kept beside a chart that
// comes from the chart repository.
var mixedFiles = map[string]string{
	"apps/mixed/notes.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: mixed-notes
data:
  note: from Git, beside a chart from a chart repository
`,
}

// createMixed creates the Application mixed: two sources joined (spec.sources), the chart
// hello from the HelmRepository charts and the directory apps/mixed of the demo repository.
func createMixed(ctx context.Context, c client.Client) error {
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			Sources: []gitsyncv1.ApplicationSource{
				{
					SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.HelmRepositoryKind, Name: "charts"},
					Helm: &gitsyncv1.HelmSpec{Chart: "hello", Version: "~0.3",
						Values: &runtime.RawExtension{Raw: []byte(`{"greeting": "hello from a chart, joined with Git"}`)}},
				},
				{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"}, Path: "apps/mixed"},
			},
			Prune: true,
		},
	}
	if err := c.Create(ctx, app); err != nil {
		return fmt.Errorf("creating the Application of two sources: %w", err)
	}
	return nil
}

// waitMixed waits until the Application mixed is Synced and says so.
func waitMixed(ctx context.Context, c client.Client, say func(string, ...any)) error {
	app, err := waitSynced(ctx, c, "mixed")
	if err != nil {
		return err
	}
	say("Application %s/mixed is Synced at %s: two sources joined (a chart from HelmRepository charts, YAML from GitRepository demo), %d objects",
		Namespace, app.Status.LastAppliedRevision, len(app.Status.Inventory.Entries))
	return nil
}
