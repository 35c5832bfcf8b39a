// Package uninstall removes gitsync from a cluster (manager, RBAC, its namespace, CRDs) and leaves every object it managed in place (`gitsync uninstall`).
package uninstall

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/install"
)

// Options of one uninstall.
type Options struct {
	// DryRun prints what would be done and changes nothing.
	DryRun bool
	// KeepCRDs keeps gitsync's CRDs and custom resources (released from their
	// finalizers), e.g. to install gitsync again later.
	KeepCRDs bool
	// Discovery lists the server's kinds, to find managed objects in gitsync's namespace.
	Discovery discovery.DiscoveryInterface
	// Out receives the progress lines and the summary.
	Out io.Writer
}

// Summary is what an uninstall did (or, with DryRun, would do).
type Summary struct {
	// Stopped are the manager workloads deleted first.
	Stopped []string
	// Released are the custom resources whose gitsync finalizers were removed.
	Released []string
	// Applications is how many Applications there were.
	Applications int
	// LeftInPlace are the managed objects that stay ("Kind/namespace/name").
	LeftInPlace []string
	// Deleted are gitsync's own objects deleted.
	Deleted []string
	// Kept are gitsync's own objects kept, with the reason.
	Kept []string
}

// Run uninstalls gitsync. The order is what keeps the workloads:
//  1. the manager is stopped (its Deployments and StatefulSets deleted, and their Pods
//     waited for), so no Application's finalizer can run its prune any more;
//  2. gitsync's finalizers are removed from its custom resources (Applications), so
//     that deleting them deletes nothing else;
//  3. the CRDs are deleted (unless KeepCRDs), which deletes every custom resource;
//  4. the rest of gitsync's install (RBAC, Service, its namespace) is deleted, except a
//     namespace that holds objects with gitsync's owner label (deleting a namespace
//     deletes what is in it).
//
// Managed objects keep their gitsync.dev/application labels: inert without gitsync, and
// what lets a later install or bootstrap take them over in place.
func Run(ctx context.Context, c client.Client, o Options) (*Summary, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	p, err := makePlan(ctx, c, o.Discovery, o.KeepCRDs)
	if err != nil {
		return nil, err
	}
	s := &Summary{Applications: p.applications}
	for _, id := range p.leftInPlace {
		s.LeftInPlace = append(s.LeftInPlace, fmtID(id.GroupKind.Kind, id.Namespace, id.Name))
	}
	would := ""
	if o.DryRun {
		would = "would "
	}

	for _, m := range p.managers {
		s.Stopped = append(s.Stopped, subject(m))
		fmt.Fprintf(o.Out, "%sstop %s\n", would, subject(m))
		if !o.DryRun {
			if err := stop(ctx, c, m); err != nil {
				return s, err
			}
		}
	}
	for _, obj := range p.finalized {
		s.Released = append(s.Released, install.Subject(obj))
		fmt.Fprintf(o.Out, "%srelease %s (finalizers removed, nothing pruned)\n", would, install.Subject(obj))
		if !o.DryRun {
			if err := release(ctx, c, obj); err != nil {
				return s, err
			}
		}
	}
	if !o.KeepCRDs {
		for _, crd := range p.crds {
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			if err := remove(ctx, c, crd, o.DryRun); err != nil {
				return s, err
			}
			s.Deleted = append(s.Deleted, install.Subject(crd))
			fmt.Fprintf(o.Out, "%sdelete %s\n", would, install.Subject(crd))
		}
		if !o.DryRun {
			for _, crd := range p.crds {
				if err := waitGone(ctx, c, crd); err != nil {
					return s, fmt.Errorf("waiting for %s to be deleted: %w", install.Subject(crd), err)
				}
			}
		}
	} else {
		for _, crd := range p.crds {
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			s.Kept = append(s.Kept, install.Subject(crd)+": --keep-crds")
			fmt.Fprintf(o.Out, "%skeep %s: --keep-crds\n", would, install.Subject(crd))
		}
	}
	for i := len(p.own) - 1; i >= 0; i-- {
		obj := p.own[i]
		if why, kept := p.keptNamespaces[obj.GetName()]; kept && obj.GetKind() == "Namespace" {
			s.Kept = append(s.Kept, install.Subject(obj)+": "+why)
			fmt.Fprintf(o.Out, "%skeep %s: %s\n", would, install.Subject(obj), why)
			continue
		}
		if err := remove(ctx, c, obj, o.DryRun); err != nil {
			return s, err
		}
		s.Deleted = append(s.Deleted, install.Subject(obj))
		fmt.Fprintf(o.Out, "%sdelete %s\n", would, install.Subject(obj))
	}

	fmt.Fprintf(o.Out, "%s: %d manager workloads stopped, %d of %d Applications released, %d managed objects left in place, %d gitsync objects deleted",
		map[bool]string{true: "✔ dry run, nothing changed", false: "✔ gitsync uninstalled"}[o.DryRun],
		len(s.Stopped), countKind(s.Released, "Application"), s.Applications, len(s.LeftInPlace), len(s.Deleted))
	if len(s.Kept) > 0 {
		fmt.Fprintf(o.Out, ", %d kept", len(s.Kept))
	}
	fmt.Fprintln(o.Out)
	return s, nil
}

// stop deletes a manager workload and waits until its Pods are gone: a Pod that is
// terminating may still reconcile.
func stop(ctx context.Context, c client.Client, m client.Object) error {
	var selector *metav1.LabelSelector
	switch w := m.(type) {
	case *appsv1.Deployment:
		selector = w.Spec.Selector
	case *appsv1.StatefulSet:
		selector = w.Spec.Selector
	}
	if err := client.IgnoreNotFound(c.Delete(ctx, m, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
		return fmt.Errorf("deleting %s: %w", subject(m), err)
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		sel = labels.SelectorFromSet(labels.Set{managerLabel: "gitsync"})
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(m.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the Pods of %s to end: %w", subject(m), err)
	}
	return nil
}

// release removes gitsync's finalizers from obj (others stay), re-reading it on a conflict.
func release(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		base := live.DeepCopy()
		var keep []string
		for _, f := range live.GetFinalizers() {
			if !strings.HasPrefix(f, finalizerPrefix) {
				keep = append(keep, f)
			}
		}
		live.SetFinalizers(keep)
		return c.Patch(ctx, live, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("releasing %s: %w", install.Subject(obj), err)
	}
	return nil
}

// remove deletes obj (background propagation); gone already is fine.
func remove(ctx context.Context, c client.Client, obj client.Object, dryRun bool) error {
	opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Delete(ctx, obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", install.Subject(obj), err)
	}
	return nil
}

// waitGone waits until obj no longer exists.
func waitGone(ctx context.Context, c client.Client, obj client.Object) error {
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		live := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func subject(obj client.Object) string {
	kind := "Deployment"
	if _, ok := obj.(*appsv1.StatefulSet); ok {
		kind = "StatefulSet"
	}
	return fmtID(kind, obj.GetNamespace(), obj.GetName())
}

func fmtID(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// countKind counts the subjects of kind.
func countKind(subjects []string, kind string) int {
	n := 0
	for _, s := range subjects {
		if strings.HasPrefix(s, kind+"/") {
			n++
		}
	}
	return n
}
