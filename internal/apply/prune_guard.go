package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/ssa/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// OrphanedAction is the Change action of a stale object that a prune left in place on
// purpose (a Namespace that holds objects this owner does not manage).
const OrphanedAction Action = "orphaned"

// RefusedError is a prune that would have deleted what must not go with it: a
// CustomResourceDefinition whose custom resources still exist (deleting a CRD deletes
// every custom resource of it), without PruneOptions.CRDs.
type RefusedError struct {
	// Subject is the CRD ("CustomResourceDefinition/widgets.example.com").
	Subject string
	// Why says what was found ("it still has custom resources, e.g. Widget/ns/one"), or
	// why it could not be told.
	Why string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to delete %s: %s (set spec.pruneCRDs: true to delete it with its custom resources)", e.Subject, e.Why)
}

// crdInUse returns a *RefusedError when the CRD still has custom resources, or when
// that cannot be told (fails closed); nil when it has none.
func (m *Manager) crdInUse(ctx context.Context, crd *unstructured.Unstructured, subject string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(crd.GroupVersionKind())
	if err := m.client.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
		return &RefusedError{Subject: subject, Why: fmt.Sprintf("cannot tell whether it has custom resources: %v", err)}
	}
	group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(live.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if served, _ := vm["served"].(bool); served {
			version, _ = vm["name"].(string)
			if storage, _ := vm["storage"].(bool); storage {
				break
			}
		}
	}
	if kind == "" || version == "" {
		return nil // serves nothing: no custom resource can exist
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind + "List"})
	if err := m.client.List(ctx, list, client.Limit(1)); err != nil {
		return &RefusedError{Subject: subject, Why: fmt.Sprintf("cannot tell whether it has custom resources: %v", err)}
	}
	if len(list.Items) == 0 {
		return nil
	}
	one := list.Items[0]
	name := one.GetName()
	if one.GetNamespace() != "" {
		name = one.GetNamespace() + "/" + name
	}
	return &RefusedError{Subject: subject, Why: fmt.Sprintf("it still has custom resources (%s/%s)", kind, name)}
}

// everyNamespace lists what the cluster itself puts in every namespace: never a reason
// to keep one.
func everyNamespace(kind, name string) bool {
	switch kind {
	case "Event":
		return true
	case "ServiceAccount":
		return name == "default"
	case "ConfigMap":
		return name == "kube-root-ca.crt"
	case "Endpoints", "EndpointSlice":
		return true // follow their Services, which are checked themselves
	}
	return false
}

// foreignObject returns an object in the namespace that this owner does not manage and
// that no other object owns (ownerReferences), as "Kind/name" ("" when there is none).
// kinds lists the namespaced kinds that can be listed. An error means it cannot be
// told: the caller keeps the Namespace.
func (m *Manager) foreignObject(ctx context.Context, ns string, kinds []schema.GroupVersionKind) (string, error) {
	notOurs, err := labels.NewRequirement(gitsyncv1.ApplicationLabel, selection.NotEquals, []string{m.owner.Name})
	if err != nil {
		return "", err
	}
	selector := labels.NewSelector().Add(*notOurs)
	for _, gvk := range kinds {
		base := []client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}, client.Limit(200)}
		opts := base
		for {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := m.client.List(ctx, list, opts...); err != nil {
				return "", fmt.Errorf("listing %s in namespace %s: %w", gvk.Kind, ns, err)
			}
			for _, item := range list.Items {
				if len(item.GetOwnerReferences()) == 0 && !everyNamespace(gvk.Kind, item.GetName()) {
					return gvk.Kind + "/" + item.GetName(), nil
				}
			}
			if list.GetContinue() == "" {
				break
			}
			opts = append(base[:len(base):len(base)], client.Continue(list.GetContinue()))
		}
	}
	return "", nil
}

// keepNamespace tells whether a stale Namespace must be orphaned instead of deleted,
// and why.
func (m *Manager) keepNamespace(ctx context.Context, ns *unstructured.Unstructured, kinds func(context.Context) ([]schema.GroupVersionKind, error)) (bool, string) {
	if kinds == nil || !utils.IsNamespace(ns) {
		return false, ""
	}
	list, err := kinds(ctx)
	if err != nil {
		return true, fmt.Sprintf("cannot list what it holds (%v)", err)
	}
	what, err := m.foreignObject(ctx, ns.GetName(), list)
	switch {
	case err != nil:
		return true, fmt.Sprintf("cannot list what it holds (%v)", err)
	case what != "":
		return true, fmt.Sprintf("it holds objects gitsync does not manage (%s)", what)
	}
	return false, ""
}

// isCRD tells whether an inventory object is a CustomResourceDefinition.
func isCRD(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(obj.GetAPIVersion(), "apiextensions.k8s.io/")
}
