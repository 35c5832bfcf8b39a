// Package uninstall removes gitsync from a cluster (manager, RBAC, its namespace, CRDs) and leaves every object it managed in place (`gitsync uninstall`).
package uninstall

import (
	"context"
	"errors"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
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
	// Timeout bounds the whole uninstall, the waits for the manager's Pods and the CRDs
	// to go included (DefaultTimeout when 0; gitsync uninstall --timeout).
	Timeout time.Duration
}

// DefaultTimeout is Options.Timeout when 0.
const DefaultTimeout = 5 * time.Minute

// Summary is what an uninstall did (or, with DryRun, would do).
type Summary struct {
	// Stopped are the manager workloads deleted first.
	Stopped []string
	// Suspended are the Applications given spec.suspend: true before their CRD goes.
	Suspended []string
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
//  1. every Application is suspended: a suspended Application is neither synced nor
//     self-healed, and its finalizer orphans its objects instead of pruning them, so an
//     operator still running (a terminating Pod that would put its own deleted
//     Deployment back; a `gitsync run` outside the cluster, which uninstall cannot
//     see) changes nothing any more;
//  2. the manager is stopped: its Deployments and StatefulSets are deleted, and their
//     Pods waited for;
//  3. gitsync's finalizers are removed from its custom resources (Applications), so
//     that deleting them deletes nothing else;
//  4. the CRDs are deleted, which deletes every custom resource; with KeepCRDs they stay
//     and the Applications suspended in step 1 are resumed, as they were;
//  5. the rest of gitsync's install (RBAC, Service, its namespace) is deleted, except a
//     namespace that holds objects with gitsync's owner label (deleting a namespace
//     deletes what is in it).
//
// Managed objects keep their gitsync.dev/application labels: inert without gitsync, and
// what lets a later install or bootstrap take them over in place.
func Run(ctx context.Context, c client.Client, o Options) (_ *Summary, err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// Whichever step the deadline stops, the error says which flag gives it more time.
	defer func() {
		if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("uninstall not done within %s (gitsync uninstall --timeout): %w", o.Timeout, err)
		}
	}()
	p, err := makePlan(ctx, c, o.Discovery, o.KeepCRDs)
	if err != nil {
		return nil, err
	}
	r := &runner{c: c, o: o, p: p, s: &Summary{Applications: p.applications}}
	if o.DryRun {
		r.would = "would "
	}
	for _, id := range p.leftInPlace {
		r.s.LeftInPlace = append(r.s.LeftInPlace, fmtID(id.GroupKind.Kind, id.Namespace, id.Name))
	}
	for _, step := range []func(context.Context) error{r.suspend, r.stop, r.release, r.deleteCRDs, r.deleteOwn} {
		if err := step(ctx); err != nil {
			return r.s, err
		}
	}
	r.summarize()
	return r.s, nil
}

// runner carries out a plan.
type runner struct {
	c     client.Client
	o     Options
	p     *plan
	s     *Summary
	would string // "would " in a dry run
}

// do prints what is done (or would be) and, unless a dry run, does it.
func (r *runner) do(line string, action func() error) error {
	fmt.Fprintf(r.o.Out, "%s%s\n", r.would, line)
	if r.o.DryRun {
		return nil
	}
	return action()
}

// suspend is step 1.
func (r *runner) suspend(ctx context.Context) error {
	for _, app := range r.p.unsuspended {
		name := fmtID(gitsyncv1.ApplicationKind, app.Namespace, app.Name)
		r.s.Suspended = append(r.s.Suspended, name)
		if err := r.do("suspend "+name, func() error { return setSuspend(ctx, r.c, app, true) }); err != nil {
			return err
		}
	}
	return nil
}

// stop is step 2.
func (r *runner) stop(ctx context.Context) error {
	for _, m := range r.p.managers {
		r.s.Stopped = append(r.s.Stopped, subject(m))
		if err := r.do("stop "+subject(m), func() error { return stop(ctx, r.c, m) }); err != nil {
			return err
		}
	}
	return nil
}

// release is step 3.
func (r *runner) release(ctx context.Context) error {
	for _, obj := range r.p.finalized {
		r.s.Released = append(r.s.Released, install.Subject(obj))
		line := "release " + install.Subject(obj) + " (finalizers removed, nothing pruned)"
		if err := r.do(line, func() error { return release(ctx, r.c, obj) }); err != nil {
			return err
		}
	}
	return nil
}

// deleteCRDs is step 4.
func (r *runner) deleteCRDs(ctx context.Context) error {
	for _, crd := range r.p.crds {
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	}
	if r.o.KeepCRDs {
		for _, crd := range r.p.crds {
			r.s.Kept = append(r.s.Kept, install.Subject(crd)+": --keep-crds")
			fmt.Fprintf(r.o.Out, "%skeep %s: --keep-crds\n", r.would, install.Subject(crd))
		}
		for _, app := range r.p.unsuspended {
			name := fmtID(gitsyncv1.ApplicationKind, app.Namespace, app.Name)
			if err := r.do("resume "+name+" (as it was)", func() error { return setSuspend(ctx, r.c, app, false) }); err != nil {
				return err
			}
		}
		return nil
	}
	for _, crd := range r.p.crds {
		if err := remove(ctx, r.c, crd, r.o.DryRun); err != nil {
			return err
		}
		r.s.Deleted = append(r.s.Deleted, install.Subject(crd))
		fmt.Fprintf(r.o.Out, "%sdelete %s\n", r.would, install.Subject(crd))
	}
	if r.o.DryRun {
		return nil
	}
	for _, crd := range r.p.crds {
		if err := waitGone(ctx, r.c, crd); err != nil {
			return fmt.Errorf("waiting for %s to be deleted: %w", install.Subject(crd), err)
		}
	}
	return nil
}

// deleteOwn is step 5, in reverse apply order.
func (r *runner) deleteOwn(ctx context.Context) error {
	for i := len(r.p.own) - 1; i >= 0; i-- {
		obj := r.p.own[i]
		if why, kept := r.p.keptNamespaces[obj.GetName()]; kept && obj.GetKind() == "Namespace" {
			r.s.Kept = append(r.s.Kept, install.Subject(obj)+": "+why)
			fmt.Fprintf(r.o.Out, "%skeep %s: %s\n", r.would, install.Subject(obj), why)
			continue
		}
		if err := remove(ctx, r.c, obj, r.o.DryRun); err != nil {
			return err
		}
		r.s.Deleted = append(r.s.Deleted, install.Subject(obj))
		fmt.Fprintf(r.o.Out, "%sdelete %s\n", r.would, install.Subject(obj))
	}
	return nil
}

// summarize prints the last line.
func (r *runner) summarize() {
	headline := "✔ gitsync uninstalled"
	if r.o.DryRun {
		headline = "✔ dry run, nothing changed"
	}
	fmt.Fprintf(r.o.Out, "%s: %d manager workloads stopped, %d of %d Applications released, %d managed objects left in place, %d gitsync objects deleted",
		headline, len(r.s.Stopped), countKind(r.s.Released, gitsyncv1.ApplicationKind), r.s.Applications, len(r.s.LeftInPlace), len(r.s.Deleted))
	if len(r.s.Kept) > 0 {
		fmt.Fprintf(r.o.Out, ", %d kept", len(r.s.Kept))
	}
	fmt.Fprintln(r.o.Out)
}

// stop deletes a manager workload and waits until it and its Pods are gone: a Pod that
// is terminating may still reconcile. One that comes back meanwhile (put back by an
// operator that had not seen its Application suspended yet) is deleted again.
func stop(ctx context.Context, c client.Client, m client.Object) error {
	var selector *metav1.LabelSelector
	switch w := m.(type) {
	case *appsv1.Deployment:
		selector = w.Spec.Selector
	case *appsv1.StatefulSet:
		selector = w.Spec.Selector
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		sel = labels.SelectorFromSet(labels.Set{managerLabel: "gitsync"})
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		live := m.DeepCopyObject().(client.Object)
		switch err := c.Get(ctx, client.ObjectKeyFromObject(m), live); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, err
		case live.GetDeletionTimestamp() == nil:
			if err := c.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("deleting %s: %w", subject(m), err)
			}
			return false, nil
		default:
			return false, nil // being deleted
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(m.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("stopping %s (its Pods still run): %w", subject(m), err)
	}
	return nil
}

// setSuspend sets app's spec.suspend.
func setSuspend(ctx context.Context, c client.Client, app *gitsyncv1.Application, suspend bool) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)))
	if err := client.IgnoreNotFound(c.Patch(ctx, app, patch)); err != nil {
		return fmt.Errorf("setting spec.suspend of %s: %w", fmtID(gitsyncv1.ApplicationKind, app.Namespace, app.Name), err)
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
