package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/fluxcd/pkg/ssa/utils"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// applyDirect applies objs, a set of one stage applied without force, in at most two
// requests per new object: a server-side dry-run of every object (all of them before
// any write, so that one failing object fails the set, and the error names each that
// failed), then an apply of each object that the dry-run shows new or changed. Only an
// object that exists is read (one GET) to tell whether the dry-run changes it. Objects
// that result.unchanged names are provably as Git wants them: not sent at all.
//
// ssa's ApplyAll, which this replaces for such sets, reads every object before its
// dry-run and applies one object at a time.
func (m *Manager) applyDirect(ctx context.Context, objs []*unstructured.Unstructured, result *Result) error {
	actions := make([]ssa.Action, len(objs))
	errs := make([]error, len(objs))
	bodies := make([][]byte, len(objs)) // each object's apply body, marshalled once
	m.each(len(objs), func(i int) {
		obj := objs[i]
		if result.unchanged[EntryOf(obj).ID] {
			actions[i] = ssa.UnchangedAction
			return
		}
		if bodies[i], errs[i] = bodyOf(obj); errs[i] == nil {
			actions[i], errs[i] = m.plan(ctx, obj, bodies[i], result)
		}
		if actions[i] == ssa.UnchangedAction {
			bodies[i] = nil // not applied: let it go now
		}
	})
	var failures []*ObjectError
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("dry-running %s: %w", utils.FmtUnstructured(objs[i]), err)
		case errors.As(err, new(*readError)), errors.As(err, new(*ConflictError)):
			return err
		default:
			failures = append(failures, &ObjectError{Subject: utils.FmtUnstructured(objs[i]), Immutable: isImmutableError(err), Err: err})
		}
	}
	if len(failures) > 0 {
		return &DryRunError{Objects: failures}
	}

	m.each(len(objs), func(i int) {
		if actions[i] == ssa.UnchangedAction {
			return
		}
		if _, err := m.applyObject(ctx, objs[i], bodies[i], ignoreFieldValidation); err != nil {
			errs[i] = fmt.Errorf("%s apply failed: %w", utils.FmtUnstructured(objs[i]), err)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("applying objects: %w", err)
	}
	entries := make([]ssa.ChangeSetEntry, len(objs))
	for i, o := range objs {
		entries[i] = ssa.ChangeSetEntry{
			ObjMetadata:  object.UnstructuredToObjMetadata(o),
			GroupVersion: o.GroupVersionKind().Version,
			Subject:      utils.FmtUnstructured(o),
			Action:       actions[i],
		}
	}
	result.add(entries)
	return nil
}

// ignoreFieldValidation spares the API server a second, strict, parse of each apply
// body (its default, Warn, parses the body again only to find duplicate fields, and a
// body marshalled from a map has none). It loses no error: a server-side apply refuses a
// field the schema does not declare ("field not declared in schema") whatever
// fieldValidation says (TestApplyUnknownFieldAppliesNothing).
var ignoreFieldValidation = client.FieldValidation(metav1.FieldValidationIgnore)

// bodyOf is what applying o sends: o in JSON, without a CRD's conversion-webhook caBundle
// when that caBundle is not a valid PEM certificate bundle (ssa's RemoveCABundleFromCRD:
// Kubernetes 1.31 and later refuse such a CRD; a valid one is sent as Git has it).
func bodyOf(o *unstructured.Unstructured) ([]byte, error) {
	if o.GetKind() == "CustomResourceDefinition" {
		o = o.DeepCopy()
		utils.RemoveCABundleFromCRD(o)
	}
	return o.MarshalJSON()
}

// applyObject server-side applies body, o's (see bodyOf; field manager gitsync, taking
// over fields others set; a dry-run with client.DryRunAll) and reads back only its
// metadata (PartialObjectMetadata, in protobuf where the API server offers it): the
// callers need no more, and the API server encodes, and gitsync decodes, a fraction of
// the object.
func (m *Manager) applyObject(ctx context.Context, o *unstructured.Unstructured, body []byte, opts ...client.PatchOption) (*metav1.PartialObjectMetadata, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(o.GroupVersionKind())
	meta.SetNamespace(o.GetNamespace())
	meta.SetName(o.GetName())
	opts = append([]client.PatchOption{client.ForceOwnership, client.FieldOwner(gitsyncv1.FieldManager)}, opts...)
	if err := m.client.Patch(ctx, meta, client.RawPatch(types.ApplyPatchType, body), opts...); err != nil {
		return nil, err
	}
	return meta, nil
}

// readError is a failed read of an existing object (not a dry-run failure).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// plan dry-runs obj and says what applying it does: create it, configure it, or nothing.
// An existing object whose owner check the watch cache answered is checked again on
// the live copy read here (a *ConflictError when another Application holds it).
func (m *Manager) plan(ctx context.Context, obj *unstructured.Unstructured, body []byte, result *Result) (ssa.Action, error) {
	id := EntryOf(obj).ID
	if result.fresh[id] {
		// The whole set's dry-run (several stages) found it new a moment ago.
		return ssa.CreatedAction, nil
	}
	if !result.previous[id] {
		// Most likely new (the last sync did not apply it): a dry-run that returns only
		// metadata tells. One that exists after all (made by someone else, or by a sync
		// that failed before its inventory was written) is dry-run again in full below.
		meta, err := m.applyObject(ctx, obj, body, client.DryRunAll, ignoreFieldValidation)
		if err != nil {
			return "", err
		}
		if meta.GetResourceVersion() == "" {
			return ssa.CreatedAction, nil
		}
	}
	// The same body, read back whole: the dry-run's result fills dry. The live object
	// is read at the same time (both are reads: a sync of one changed object waits
	// for the longer of the two, not for both).
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	read := make(chan error, 1)
	go func() { read <- m.client.Get(ctx, client.ObjectKeyFromObject(obj), existing) }()
	dry := &unstructured.Unstructured{}
	dry.SetGroupVersionKind(obj.GroupVersionKind())
	dry.SetNamespace(obj.GetNamespace())
	dry.SetName(obj.GetName())
	dryErr := m.client.Patch(ctx, dry, client.RawPatch(types.ApplyPatchType, body), client.DryRunAll, client.ForceOwnership,
		client.FieldOwner(gitsyncv1.FieldManager), ignoreFieldValidation)
	readErr := <-read
	switch {
	case dryErr != nil:
		return "", dryErr
	case dry.GetResourceVersion() == "":
		return ssa.CreatedAction, nil
	case apierrors.IsNotFound(readErr): // deleted since the dry-run
		return ssa.CreatedAction, nil
	case readErr != nil:
		return "", &readError{fmt.Errorf("reading %s: %w", utils.FmtUnstructured(obj), readErr)}
	}
	if result.cachedOwners[id] {
		if other, ok := OwnerOf(existing.GetLabels()); ok {
			if err := m.conflict(ctx, obj, other, result.released); err != nil {
				return "", err
			}
		}
	}
	if changes(existing, dry) {
		return ssa.ConfiguredAction, nil
	}
	return ssa.UnchangedAction, nil
}

// changes tells whether dry, the dry-run result, differs from existing in labels,
// annotations or anything outside metadata and status (ssa's drift test).
func changes(existing, dry *unstructured.Unstructured) bool {
	if !apiequality.Semantic.DeepEqual(existing.GetLabels(), dry.GetLabels()) ||
		!apiequality.Semantic.DeepEqual(existing.GetAnnotations(), dry.GetAnnotations()) {
		return true
	}
	strip := func(o *unstructured.Unstructured) map[string]any {
		c := o.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata")
		unstructured.RemoveNestedField(c.Object, "status")
		_ = normalize.DryRunUnstructured(c)
		return c.Object
	}
	return !apiequality.Semantic.DeepEqual(strip(existing), strip(dry))
}

// each runs f(0) … f(n-1), m.concurrency at a time, and waits for them: at most
// m.concurrency goroutines, each taking the next index until none is left (a goroutine per
// index grew a fresh stack through the API client's deep calls for every object).
func (m *Manager) each(n int, f func(i int)) {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range min(n, max(m.concurrency, 1)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}
