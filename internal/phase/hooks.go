package phase

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// runHooks runs the hooks of one phase as Helm runs the hooks of one event: in the
// order of sortHooks, each created (once BeforeHookCreation removed the previous run's)
// and waited for before the next one is created. Argo CD hooks of one weight are
// created together and waited for together, as Argo CD runs a wave. HookSucceeded
// deletions wait until every hook of the phase has succeeded, and go last created
// first; when a hook fails, it is deleted if its policy says HookFailed, the hooks
// that succeeded before it by HookSucceeded, and the phase stops there.
//
// A resumed run does not create the hooks it created before it yielded: it takes up
// each where it was (succeeded, or still awaited). It returns errWaiting when the call
// yields; the hooks created so far are in the Outcome then, the awaited ones Running.
func (x *run) runHooks(ctx context.Context, phase string, hooks []Hook) error {
	r, out := x.r, x.out
	var succeeded []finishedHook
	waited := false
	for start := 0; start < len(hooks); {
		end := start + 1
		if hooks[start].Together {
			for end < len(hooks) && hooks[end].Together && hooks[end].Weight == hooks[start].Weight {
				end++
			}
		}
		group := hooks[start:end]
		start = end

		created := make([]*unstructured.Unstructured, len(group))
		before := make([]*HookRun, len(group))
		for i, h := range group {
			if before[i] = x.recordedHook(phase); before[i] != nil {
				created[i] = createdBefore(h, before[i])
				continue
			}
			obj, err := r.createHook(ctx, h)
			if err != nil {
				out.Hooks = append(out.Hooks, hookRun(h, h.Object, HookFailed, err.Error()))
				x.deleteSucceeded(ctx, succeeded)
				return fmt.Errorf("%s hook %s: %w", phase, hookKey(h.Object), err)
			}
			created[i] = obj
		}
		var failed error
		for i, h := range group {
			run := hookRun(h, created[i], HookRunning, "")
			awaited := false
			if b := before[i]; b != nil && b.Result != HookRunning {
				run.Result, run.Message, run.Deleted = b.Result, b.Message, b.Deleted
			} else {
				var err error
				run.Result, run.Message, err = x.waitHook(ctx, phase, created[i], b != nil)
				if err != nil {
					// The call yields: this hook and the rest of its group are awaited.
					out.Hooks = append(out.Hooks, run)
					for j := i + 1; j < len(group); j++ {
						later := hookRun(group[j], created[j], HookRunning, "")
						if b := before[j]; b != nil {
							later.Result, later.Message = b.Result, b.Message
						}
						out.Hooks = append(out.Hooks, later)
					}
					return err
				}
				waited, awaited = true, true
			}
			if run.Result == HookSucceeded {
				succeeded = append(succeeded, finishedHook{hook: h, obj: created[i], run: len(out.Hooks), before: before[i] != nil})
			} else {
				if failed == nil {
					failed = fmt.Errorf("%s hook %s/%s failed: %s", phase, run.Kind, run.Name, run.Message)
				}
				if awaited && h.HasPolicy(gitsyncv1.HookDeleteFailed) && r.deleteHook(ctx, created[i]) == nil {
					run.Deleted = true
				}
			}
			out.Hooks = append(out.Hooks, run)
		}
		if failed != nil {
			x.deleteSucceeded(ctx, succeeded)
			return failed
		}
	}
	if waited {
		// (A phase that was over before the call yielded deleted its hooks then.)
		x.deleteSucceeded(ctx, succeeded)
	}
	return nil
}

// createdBefore is the object of a hook that a resumed run created before it yielded.
func createdBefore(h Hook, run *HookRun) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(h.Object.GroupVersionKind())
	obj.SetNamespace(run.Namespace)
	obj.SetName(run.Name)
	return obj
}

// finishedHook is a hook that succeeded, with its index in Outcome.Hooks; before tells
// that a call before this one created it (it is known by name only).
type finishedHook struct {
	hook   Hook
	obj    *unstructured.Unstructured
	run    int
	before bool
}

// deleteSucceeded deletes the hooks whose policy is HookSucceeded, last created first.
// A hook created before the call yielded is deleted only if it is still this
// Application's hook (status.hooks names it).
func (x *run) deleteSucceeded(ctx context.Context, hooks []finishedHook) {
	for i := len(hooks) - 1; i >= 0; i-- {
		h := hooks[i]
		if !h.hook.HasPolicy(gitsyncv1.HookDeleteSucceeded) {
			continue
		}
		obj := h.obj
		if h.before {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(obj.GroupVersionKind())
			if err := x.r.Client.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil || !x.r.ownHook(live) {
				continue
			}
			obj = live
		}
		if x.r.deleteHook(ctx, obj) == nil {
			x.out.Hooks[h.run].Deleted = true
		}
	}
}

func hookRun(h Hook, obj *unstructured.Unstructured, result, msg string) HookRun {
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName()
	}
	return HookRun{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: name, Phase: h.Phase, Result: result, Message: msg}
}

// dryRunHooks creates every hook with dry-run, so that an invalid hook fails the sync
// before anything is written. A named hook that exists already is fine (it is deleted
// before it is created again), and so is one whose Namespace or kind the revision itself
// defines (it is judged when it is created, after the definitions).
func (r *Runner) dryRunHooks(ctx context.Context, hooks []Hook, defs definitions) error {
	var errs []error
	for _, h := range hooks {
		obj := r.hookObject(h)
		err := r.Client.Create(ctx, obj, client.DryRunAll, client.FieldOwner(gitsyncv1.FieldManager))
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err) && defs.namespaces[obj.GetNamespace()]:
		case meta.IsNoMatchError(err) && defs.crds:
		default:
			errs = append(errs, fmt.Errorf("%s hook %s: %w", h.Phase, hookKey(h.Object), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("server-side dry-run failed: %w", errors.Join(errs...))
	}
	return nil
}

func (r *Runner) hookObject(h Hook) *unstructured.Unstructured {
	obj := h.Object.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range r.HookLabels {
		labels[k] = v
	}
	obj.SetLabels(labels)
	return obj
}

// createHook applies the BeforeHookCreation policy (the previous run's hook is
// deleted, and its deletion waited for) and creates the hook.
func (r *Runner) createHook(ctx context.Context, h Hook) (*unstructured.Unstructured, error) {
	obj := r.hookObject(h)
	if h.HasPolicy(gitsyncv1.HookDeleteBeforeCreation) {
		if err := r.deletePrevious(ctx, obj); err != nil {
			return nil, err
		}
	}
	r.progress(ctx, "%s: creating %s", h.Phase, hookKey(obj))
	if err := r.Client.Create(ctx, obj, client.FieldOwner(gitsyncv1.FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating: %w (set the delete policy BeforeHookCreation, or use generateName)", err)
		}
		return nil, fmt.Errorf("creating: %w", err)
	}
	return obj, nil
}

// deletePrevious deletes what an earlier run left of this hook: the object of the same
// name, or, for a generateName hook, the objects this Application created with the same
// generateName.
func (r *Runner) deletePrevious(ctx context.Context, obj *unstructured.Unstructured) error {
	var old []*unstructured.Unstructured
	if obj.GetName() != "" {
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(obj.GroupVersionKind())
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading the previous hook: %w", err)
		case !r.ownHook(existing):
			// Only this Application's hooks are deleted: a named hook must not be a way
			// to delete any object of that name.
			return fmt.Errorf("%s exists and is not a hook of this Application: refusing to delete it (rename the hook, or use generateName)", hookKey(existing))
		default:
			old = append(old, existing)
		}
	} else {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(obj.GroupVersionKind())
		if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels(r.HookLabels)); err != nil {
			return fmt.Errorf("listing previous hooks: %w", err)
		}
		for i := range list.Items {
			if list.Items[i].GetGenerateName() == obj.GetGenerateName() {
				old = append(old, &list.Items[i])
			}
		}
	}
	for _, o := range old {
		if err := r.deleteHook(ctx, o); err != nil {
			return err
		}
	}
	for _, o := range old {
		if err := r.waitGone(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// ownHook tells whether obj carries this run's hook labels (HookLabels).
func (r *Runner) ownHook(obj *unstructured.Unstructured) bool {
	labels := obj.GetLabels()
	for k, v := range r.HookLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (r *Runner) deleteHook(ctx context.Context, obj *unstructured.Unstructured) error {
	err := r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting hook %s: %w", hookKey(obj), err)
	}
	return nil
}

func (r *Runner) waitGone(ctx context.Context, obj *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	for delay := firstPoll; ; delay = nextPoll(delay) {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(obj.GroupVersionKind())
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), o)
		if apierrors.IsNotFound(err) || (err == nil && o.GetUID() != obj.GetUID()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the previous hook %s to be deleted", hookKey(obj))
		case <-time.After(delay):
		}
	}
}
