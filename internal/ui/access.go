package ui

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// allowed asks the API server (SelfSubjectAccessReview) whether the identity may do verb
// on the resource.
func allowed(ctx context.Context, c client.Client, attrs authorizationv1.ResourceAttributes) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	if err := c.Create(ctx, review); err != nil {
		return false, fmt.Errorf("reviewing access to %s %s: %w", attrs.Verb, attrs.Resource, err)
	}
	return review.Status.Allowed, nil
}

func appAttrs(verb, namespace, name string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: verb, Group: gitsyncv1.GroupVersion.Group,
		Resource: "applications", Namespace: namespace, Name: name}
}

// visibleNamespaces returns nil when the identity may list and watch Applications in
// every namespace, else the namespaces where it may (found by listing namespaces, which
// it must then be allowed to do).
func visibleNamespaces(ctx context.Context, c client.Client) ([]string, error) {
	all := true
	for _, verb := range []string{"list", "watch"} {
		ok, err := allowed(ctx, c, appAttrs(verb, "", ""))
		if err != nil {
			return nil, err
		}
		all = all && ok
	}
	if all {
		return nil, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("you may not list Applications in all namespaces, and listing namespaces failed (use --namespace): %w", err)
	}
	namespaces := []string{}
	for _, ns := range list.Items {
		ok, err := allowed(ctx, c, appAttrs("watch", ns.Name, ""))
		if err != nil {
			return nil, err
		}
		if ok {
			namespaces = append(namespaces, ns.Name)
		}
	}
	if len(namespaces) == 0 {
		return nil, fmt.Errorf("you may not watch Applications in any namespace")
	}
	return namespaces, nil
}

// metadataOf is an object that a cache holds as metadata only.
func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}
