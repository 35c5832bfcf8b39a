package apply

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DryRunError lists every object whose server-side dry-run failed. Apply returns it
// before writing anything, except for objects that could only be dry-run after the
// first stage (see Manager.Apply).
type DryRunError struct {
	// Objects has one error per failing object, in apply order.
	Objects []*ObjectError
}

// Error implements error.
func (e *DryRunError) Error() string {
	msgs := make([]string, len(e.Objects))
	for i, o := range e.Objects {
		msgs[i] = o.Error()
	}
	return "server-side dry-run failed: " + strings.Join(msgs, "; ")
}

// Unwrap returns the per-object errors, so that errors.As and apierrors.IsForbidden
// and friends see the API server's errors.
func (e *DryRunError) Unwrap() []error {
	errs := make([]error, len(e.Objects))
	for i, o := range e.Objects {
		errs[i] = o
	}
	return errs
}

// ObjectError is the dry-run failure of one object.
type ObjectError struct {
	// Subject is the object, "Kind/namespace/name".
	Subject string
	// Immutable is true when the object cannot be updated in place because a field
	// that the API server keeps immutable changed; Options.Force recreates it.
	Immutable bool
	// Err is the API server's answer.
	Err error
}

// Error implements error.
func (e *ObjectError) Error() string {
	if e.Immutable {
		return fmt.Sprintf("%s: field is immutable, `force: true` recreates the object: %v", e.Subject, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Subject, e.Err)
}

// Unwrap returns the API server's error.
func (e *ObjectError) Unwrap() error { return e.Err }

// immutableMessages match what the API server (built-in validation, CEL rules, common
// webhooks) says when an update touches a field that cannot change.
//
// ssa's IsImmutableError is not used to decide: it counts every Invalid and Conflict
// answer as immutable, and under Force ssa would then delete an object that is simply
// invalid. An object only passes the dry-run under Force when the message says that a
// field is immutable.
var immutableMessages = regexp.MustCompile(`immutable|may not change once set|updates to statefulset spec for fields other than`)

func isImmutableError(err error) bool {
	return immutableMessages.MatchString(err.Error())
}

// definitions are the CRDs and Namespaces that a set of objects creates itself.
type definitions struct {
	namespaces map[string]bool
	kinds      map[schema.GroupKind]bool
}

func definitionsOf(objs []*unstructured.Unstructured) definitions {
	d := definitions{namespaces: map[string]bool{}, kinds: map[schema.GroupKind]bool{}}
	for _, o := range objs {
		d.add(o)
	}
	return d
}

// add records o when it is a Namespace or a CRD.
func (d definitions) add(o *unstructured.Unstructured) {
	switch {
	case utils.IsNamespace(o):
		d.namespaces[o.GetName()] = true
	case utils.IsCRD(o):
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		d.kinds[schema.GroupKind{Group: group, Kind: kind}] = true
	}
}

// defines says whether o is one of d's definitions (a Namespace or CRD d holds).
func (d definitions) defines(o *unstructured.Unstructured) bool {
	return (utils.IsNamespace(o) && d.namespaces[o.GetName()]) || (utils.IsCRD(o) && len(d.kinds) > 0)
}

// canWait says whether a dry-run failure of obj may only mean that a definition of
// the same set is not applied yet: its kind comes from a CRD of the set (which may be
// new, or may add the fields obj uses), or its namespace is a Namespace of the set
// that does not exist yet.
func (d definitions) canWait(obj *unstructured.Unstructured, err error) bool {
	if d.kinds[obj.GroupVersionKind().GroupKind()] {
		return true
	}
	return d.namespaces[obj.GetNamespace()] && apierrors.IsNotFound(err)
}

// dryRunAll dry-runs every object (concurrently) and returns the objects whose failure
// may be due to a CRD or Namespace of defs not being applied yet: they are to be
// dry-run again after the first stage. Any other failure makes a *DryRunError. With
// force, objects that fail only on an immutable field pass: ssa recreates them. The IDs
// of the objects whose dry-run found them new go into fresh (when not nil).
//
// With definitions in the set, those are dry-run first: an object in a Namespace, or of
// a kind, that they show to be new cannot pass yet and goes to the later ones without a
// request.
func (m *Manager) dryRunAll(ctx context.Context, objs []*unstructured.Unstructured, defs definitions, force bool, fresh map[string]bool) ([]*unstructured.Unstructured, error) {
	errs := make([]error, len(objs))
	isNew := make([]bool, len(objs))
	waits := make([]bool, len(objs)) // left for later without a request
	var first, rest []int
	for i, o := range objs {
		if defs.defines(o) {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	dryRun := func(indexes []int) {
		m.each(len(indexes), func(j int) {
			i := indexes[j]
			isNew[i], errs[i] = m.dryRun(ctx, objs[i])
		})
	}
	if len(first) > 0 {
		dryRun(first)
		created := definitions{namespaces: map[string]bool{}, kinds: map[schema.GroupKind]bool{}}
		for _, i := range first {
			if errs[i] == nil && isNew[i] {
				created.add(objs[i])
			}
		}
		rest = slices.DeleteFunc(rest, func(i int) bool {
			o := objs[i]
			waits[i] = created.namespaces[o.GetNamespace()] || created.kinds[o.GroupVersionKind().GroupKind()]
			return waits[i]
		})
	}
	dryRun(rest)

	var (
		later    []*unstructured.Unstructured
		failures []*ObjectError
	)
	for i, err := range errs {
		obj := objs[i]
		switch {
		case waits[i]:
			later = append(later, obj)
		case err == nil:
			if isNew[i] && fresh != nil {
				fresh[EntryOf(obj).ID] = true
			}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("dry-running %s: %w", utils.FmtUnstructured(obj), err)
		case defs.canWait(obj, err):
			later = append(later, obj)
		case force && isImmutableError(err):
		default:
			failures = append(failures, &ObjectError{
				Subject:   utils.FmtUnstructured(obj),
				Immutable: isImmutableError(err),
				Err:       err,
			})
		}
	}
	if len(failures) > 0 {
		return nil, &DryRunError{Objects: failures}
	}
	return later, nil
}

// dryRun server-side applies obj in dry-run mode, as it is applied (applyObject, the
// body bodyOf makes), and says whether obj is new: the API server's answer (metadata
// only) has no resourceVersion.
func (m *Manager) dryRun(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	body, err := bodyOf(obj)
	if err != nil {
		return false, err
	}
	meta, err := m.applyObject(ctx, obj, body, client.DryRunAll, ignoreFieldValidation)
	if err != nil {
		return false, err
	}
	return meta.GetResourceVersion() == "", nil
}
