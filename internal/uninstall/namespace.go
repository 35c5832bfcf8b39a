package uninstall

import (
	"context"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// managedIn returns one object in namespace that carries gitsync's owner label
// ("Kind/name") and that the uninstall does not delete anyway (gone(id): gitsync's own
// objects, which a self-managing Application labels too), or "" when there is none. It
// asks every namespaced kind the server lists (metadata only), so that it finds managed
// objects whose Application's inventory is gone too (a second uninstall, a lost status).
func managedIn(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, namespace string, gone func(object.ObjMetadata) bool) (string, error) {
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
			err := c.List(ctx, items, client.InNamespace(namespace), client.HasLabels{gitsyncv1.ApplicationLabel})
			if err != nil {
				continue // a kind this identity may not list, or one that went away
			}
			for _, item := range items.Items {
				id := object.ObjMetadata{Namespace: namespace, Name: item.Name, GroupKind: gv.WithKind(r.Kind).GroupKind()}
				if !gone(id) {
					return r.Kind + "/" + item.Name, nil
				}
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
