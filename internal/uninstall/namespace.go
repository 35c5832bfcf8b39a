package uninstall

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// managedIn returns one object in namespace that carries gitsync's owner label
// ("Kind/name"), or "" when there is none. It asks every namespaced kind the server
// lists (metadata only, one item each), so that it finds managed objects whose
// Application's inventory is gone too (a second uninstall, a lost status).
func managedIn(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, namespace string) (string, error) {
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return "", fmt.Errorf("discovering the server's kinds: %w", err)
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !canList(r) {
				continue
			}
			items := &metav1.PartialObjectMetadataList{}
			items.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			err := c.List(ctx, items, client.InNamespace(namespace), client.HasLabels{gitsyncv1.ApplicationLabel}, client.Limit(1))
			if err != nil {
				continue // a kind this identity may not list, or one that went away
			}
			if len(items.Items) > 0 {
				return r.Kind + "/" + items.Items[0].Name, nil
			}
		}
	}
	return "", nil
}

func canList(r metav1.APIResource) bool {
	for _, v := range r.Verbs {
		if v == "list" {
			return true
		}
	}
	return false
}
