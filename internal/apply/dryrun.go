package apply

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
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
		switch {
		case utils.IsNamespace(o):
			d.namespaces[o.GetName()] = true
		case utils.IsCRD(o):
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			d.kinds[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return d
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
// force, objects that fail only on an immutable field pass: ssa recreates them.
func (m *Manager) dryRunAll(ctx context.Context, objs []*unstructured.Unstructured, defs definitions, force bool) ([]*unstructured.Unstructured, error) {
	errs := make([]error, len(objs))
	m.each(len(objs), func(i int) { errs[i] = m.dryRun(ctx, objs[i]) })

	var (
		later    []*unstructured.Unstructured
		failures []*ObjectError
	)
	for i, err := range errs {
		obj := objs[i]
		switch {
		case err == nil:
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

// dryRun server-side applies obj in dry-run mode, the way ssa applies it.
func (m *Manager) dryRun(ctx context.Context, obj *unstructured.Unstructured) error {
	return m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		client.DryRunAll, client.ForceOwnership, client.FieldOwner(gitsyncv1.FieldManager))
}
