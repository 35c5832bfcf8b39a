package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// Owner is the Application that manages objects.
type Owner struct {
	Name      string
	Namespace string
}

// Labels returns the labels that mark an object as managed by o.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		gitsyncv1.ApplicationLabel:          o.Name,
		gitsyncv1.ApplicationNamespaceLabel: o.Namespace,
	}
}

// String returns "namespace/name".
func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// ownerOf returns the Owner named by an object's labels, and false when the object
// carries no owner label.
func ownerOf(labels map[string]string) (Owner, bool) {
	name, ok := labels[gitsyncv1.ApplicationLabel]
	if !ok {
		return Owner{}, false
	}
	return Owner{Name: name, Namespace: labels[gitsyncv1.ApplicationNamespaceLabel]}, true
}

// setLabels sets o's labels on obj, replacing any owner labels it had.
func (o Owner) setLabels(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range o.Labels() {
		labels[k] = v
	}
	obj.SetLabels(labels)
}

// ConflictError says that an object of the set is already managed by another Application.
type ConflictError struct {
	// Subject is the object, "Kind/namespace/name".
	Subject string
	// Owner is the Application whose labels the object carries.
	Owner Owner
}

// Error implements error.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is managed by Application %s", e.Subject, e.Owner)
}

// checkOwners reads the metadata of each object that is not in previous (one GET each,
// through the apply client) and returns a *ConflictError, in apply order, for the first
// one labelled for another Owner. Objects that do not exist yet (or whose kind does not
// exist yet) are fine.
func (m *Manager) checkOwners(ctx context.Context, objs []*unstructured.Unstructured, previous []Entry) error {
	known := make(map[string]bool, len(previous))
	for _, e := range previous {
		known[e.ID] = true
	}
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, m.concurrency)
	for i, obj := range objs {
		if known[EntryOf(obj).ID] {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = m.checkOwner(ctx, obj)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) checkOwner(ctx context.Context, obj *unstructured.Unstructured) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("checking the owner of %s: %w", utils.FmtUnstructured(obj), err)
	}
	if other, ok := ownerOf(existing.GetLabels()); ok && other != m.owner {
		return &ConflictError{Subject: utils.FmtUnstructured(obj), Owner: other}
	}
	return nil
}
