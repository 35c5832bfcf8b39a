package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// fleetFiles are the fleet/* directories of the demo repository: one tiny app each, a
// Namespace and a ConfigMap, which the ApplicationSet fleet makes an Application of.
var fleetFiles = map[string]string{
	"fleet/blue/app.yaml":  fleetApp("blue"),
	"fleet/green/app.yaml": fleetApp("green"),
}

func fleetApp(color string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: fleet-%[1]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: color
  namespace: fleet-%[1]s
data:
  color: %[1]s
`, color)
}

// fleetApps are the Applications the ApplicationSet generates, one per fleet/* directory.
var fleetApps = []string{"fleet-blue", "fleet-green"}

// createFleet creates the ApplicationSet fleet: a gitDirectories generator over fleet/*
// of the demo repository, rolled out blue first, then the rest (RollingSync).
func createFleet(ctx context.Context, c client.Client) error {
	set := &gitsyncv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSetSpec{
			Generators: []gitsyncv1.ApplicationSetGenerator{{ApplicationSetBaseGenerator: gitsyncv1.ApplicationSetBaseGenerator{
				GitDirectories: &gitsyncv1.GitDirectoriesGenerator{
					SourceRef: gitsyncv1.LocalObjectReference{Name: "demo"},
					Include:   []string{"fleet/*"},
				},
			}}},
			Template: gitsyncv1.ApplicationSetTemplate{
				Metadata: gitsyncv1.ApplicationSetTemplateMeta{
					Name:   "fleet-{{ .path.basename }}",
					Labels: map[string]string{"color": "{{ .path.basename }}"},
				},
				Spec: gitsyncv1.ApplicationSpec{
					SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"},
					Path:      "{{ .path.path }}",
					Prune:     true,
				},
			},
			Interval: &metav1.Duration{Duration: time.Minute},
		},
	}
	if err := c.Create(ctx, set); err != nil {
		return fmt.Errorf("creating the ApplicationSet fleet: %w", err)
	}
	return nil
}

// fleetHints are the demo's printed hints for the ApplicationSet.
const fleetHints = `  # a fleet: the ApplicationSet fleet makes one Application per fleet/* directory of the repository
  gitsync get apps -n {ns}                          # fleet-blue and fleet-green, generated
  gitsync build appset fleet -n {ns}                # the Applications it generates now
  kubectl get configmap color -n fleet-blue -o jsonpath='{.data.color}{"\n"}'

`

// waitFleet waits until the Applications the ApplicationSet generates are Synced.
func waitFleet(ctx context.Context, c client.Client, say func(string, ...any)) error {
	for _, name := range fleetApps {
		if _, err := waitSynced(ctx, c, name); err != nil {
			return err
		}
	}
	say("ApplicationSet %s/fleet generated Applications %s (one per fleet/* directory), Synced", Namespace, strings.Join(fleetApps, " and "))
	return nil
}
