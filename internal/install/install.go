// Package install renders gitsync's own manifests (the embedded config/default) and applies them with server-side apply: `gitsync install` and `gitsync bootstrap` share it.
package install

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/config"
)

// FieldManager is the field manager of every apply `gitsync install` and `gitsync
// bootstrap` make (the operator's own applies use "gitsync").
const FieldManager = "gitsync-install"

// Actions an Apply reports per object, as kubectl prints them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
)

// Manifests renders config/default with image (empty: the embedded default) as the
// manager's image, in apply order (CRDs and Namespaces first). Its operator account is
// bound to the least-privilege ClusterRole gitsync-manager-tenant-mode.
func Manifests(image string) ([]*unstructured.Unstructured, error) {
	return ManifestsWith(image, true)
}

// ManifestsWith is Manifests; without leastPrivilege, config/full-privilege (the
// operator's account bound to gitsync-manager, which may write anything).
func ManifestsWith(image string, leastPrivilege bool) ([]*unstructured.Unstructured, error) {
	render := config.Install
	if !leastPrivilege {
		render = config.InstallFullPrivilege
	}
	objs, err := render()
	if err != nil {
		return nil, err
	}
	if image != "" {
		setImage(objs, image)
	}
	sort.Sort(ssa.SortableUnstructureds(objs))
	return objs, nil
}

// setImage sets the image of the manager containers of the Deployments in objs.
func setImage(objs []*unstructured.Unstructured, image string) {
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
				m["image"] = image
			}
		}
		_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
	}
}

// Export writes objs as one multi-document YAML stream (`gitsync install --export`).
func Export(w io.Writer, objs []*unstructured.Unstructured) error {
	for i, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("encoding %s/%s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// ExportBytes is Export into a byte slice.
func ExportBytes(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	if err := Export(&b, objs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Change is what one apply did to one object.
type Change struct {
	// Subject is "Kind/name" or "Kind/namespace/name".
	Subject string
	// Action is Created, Configured or Unchanged.
	Action string
}

// Apply server-side-applies objs in order with FieldManager (taking over fields that
// another manager owns) and reports, per object, whether it was created, changed or
// left as it was. An object that exists is first applied as a server-side dry-run: when
// the result equals the live object (ownership, resourceVersion and status aside, which
// the operator may be writing meanwhile) nothing is written and it is Unchanged. objs
// are updated with the server's answer (or the live object).
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]Change, error) {
	changes := make([]Change, 0, len(objs))
	for _, obj := range objs {
		subject := Subject(obj)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		action := Configured
		switch err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); {
		case apierrors.IsNotFound(err):
			action = Created
		case err != nil:
			return changes, fmt.Errorf("reading %s: %w", subject, err)
		default:
			if err := dropConversionWebhook(ctx, c, obj, live); err != nil {
				return changes, err
			}
			dry := obj.DeepCopy()
			if err := c.Patch(ctx, dry, client.Apply, client.ForceOwnership, client.FieldOwner(FieldManager), client.DryRunAll); err != nil {
				return changes, fmt.Errorf("applying %s (dry-run): %w", subject, err)
			}
			if sameContent(dry, live) {
				live.DeepCopyInto(obj)
				changes = append(changes, Change{Subject: subject, Action: Unchanged})
				continue
			}
		}
		if err := c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(FieldManager)); err != nil {
			return changes, fmt.Errorf("applying %s: %w", subject, err)
		}
		changes = append(changes, Change{Subject: subject, Action: action})
	}
	return changes, nil
}

// sameContent compares two states of one object without what an apply that changes
// nothing may still differ in: managedFields, resourceVersion, generation and status.
func sameContent(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c.Object, "metadata", "generation")
		unstructured.RemoveNestedField(c.Object, "status")
		return c.Object
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// Subject names obj as "Kind/name" (cluster-scoped) or "Kind/namespace/name".
func Subject(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + "/" + obj.GetName()
	}
	return kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// AllUnchanged tells whether no change created or configured anything.
func AllUnchanged(changes []Change) bool {
	for _, c := range changes {
		if c.Action != Unchanged {
			return false
		}
	}
	return true
}
