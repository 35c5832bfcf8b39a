package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/tree"
)

// ObjectView is one node of the tree: its live manifest, its Git manifest and the diff.
type ObjectView struct {
	ObjectDiff
	// Note explains what is missing (no Git manifest for an owned child, say).
	Note string `json:"note,omitempty"`
}

// apiObject shows the object ?id=Kind/namespace/name of the application.
func (s *Server) apiObject(w http.ResponseWriter, r *http.Request) {
	app, err := s.getApp(r)
	if err != nil {
		fail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	kind, _, _ := strings.Cut(id, "/")
	if kind == "" {
		fail(w, errBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	// Decided on the id alone, before anything is read: the caller may get objects of
	// this kind there, or learns nothing about the object (not even from its diff).
	gvk, ok := s.objectKind(app, id)
	if !ok {
		// A hook of the last run (status.hooks, which the caller reads with the
		// Application): its phase and result; hooks are not kept in the inventory.
		if note, isHook := hookNote(app, id); isHook {
			writeJSON(w, ObjectView{ObjectDiff: ObjectDiff{Subject: id}, Note: note})
			return
		}
		fail(w, apierrors.NewNotFound(schema.GroupResource{Resource: "objects"}, id))
		return
	}
	if _, ns, name := splitID(id); !s.mayGet(ctx, callerOf(ctx), gvk, ns, name) {
		fail(w, fmt.Errorf("you may not get %s: %w", id, errForbidden))
		return
	}
	if app.Spec.Cluster != nil { // read on its Cluster: the caller may get it first
		if _, err := s.objectReader(ctx, app); err != nil {
			fail(w, err)
			return
		}
	}
	view := ObjectView{ObjectDiff: ObjectDiff{Subject: id}}
	if s.inInventory(app, id) && s.opts.Diff != nil {
		diffs, err := s.opts.Diff(ctx, s.cfg, s.direct, app, func(subject string) bool { return subject == id })
		switch {
		case err != nil:
			view.Note = "Git manifest unavailable: " + err.Error()
		case len(diffs) == 0:
			view.Note = "Git no longer holds this object; the next sync prunes it if prune is on."
		case diffs[0].Action == operations.PrunedAction:
			view.Note = "Git no longer holds this object; the next sync prunes it."
		default:
			view.ObjectDiff = diffs[0]
		}
	}
	if view.Live == "" && kind != "Secret" {
		live, err := s.liveYAML(ctx, app, id, gvk)
		if err != nil {
			fail(w, err)
			return
		}
		view.Live = live
		if view.Note == "" && !s.inInventory(app, id) {
			view.Note = "Owned by an object of the application; not in Git."
		}
	}
	writeJSON(w, view)
}

// hookNote says what the last run did with the hook id: its phase, result and message.
func hookNote(app *gitsyncv1.Application, id string) (string, bool) {
	for _, h := range app.Status.Hooks {
		hid := h.Kind + "/" + h.Namespace + "/" + h.Name
		if h.Namespace == "" {
			hid = h.Kind + "/" + h.Name
		}
		if hid == id {
			note := "A " + h.Phase + " hook of the sync of " + h.Revision + ": " + h.Result + "."
			if h.Message != "" {
				note += " " + h.Message
			}
			return note, true
		}
	}
	return "", false
}

func (s *Server) inInventory(app *gitsyncv1.Application, id string) bool {
	if app.Status.Inventory == nil {
		return false
	}
	for _, e := range app.Status.Inventory.Entries {
		if entryID(e) == id {
			return true
		}
	}
	return false
}

// liveYAML reads an object of the app's tree as YAML (never a Secret): from the cache, or
// from its Cluster with spec.cluster (objectReader).
func (s *Server) liveYAML(ctx context.Context, app *gitsyncv1.Application, id string, gvk schema.GroupVersionKind) (string, error) {
	nodes, _, err := s.tree(ctx, app)
	if err != nil {
		return "", err
	}
	var found *Node
	var walk func([]*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if n.ID == id && found == nil {
				found = n
			}
			walk(n.Children)
		}
	}
	walk(nodes)
	if found == nil {
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "objects"}, id)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	reader, err := s.objectReader(ctx, app)
	if err != nil {
		return "", err
	}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: found.Namespace, Name: found.Name}, obj); err != nil {
		return "", err
	}
	obj.SetManagedFields(nil)
	b, err := yaml.Marshal(obj.Object)
	return string(b), err
}

// objectKind is the kind of the object id of app's tree: an inventory entry's, or an
// owned child's (tree.ChildKinds); false for an id that can be neither.
func (s *Server) objectKind(app *gitsyncv1.Application, id string) (schema.GroupVersionKind, bool) {
	for _, e := range apply.EntriesOf(app.Status.Inventory) {
		if e.Subject() == id {
			gvk, err := e.GroupVersionKind()
			return gvk, err == nil
		}
	}
	kind, ns, name := splitID(id)
	for _, gvk := range tree.ChildKinds {
		if gvk.Kind == kind && ns != "" && name != "" {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// splitID splits "Kind/namespace/name" ("Kind/name": cluster-scoped).
func splitID(id string) (kind, namespace, name string) {
	parts := strings.SplitN(id, "/", 3)
	switch len(parts) {
	case 3:
		return parts[0], parts[1], parts[2]
	case 2:
		return parts[0], "", parts[1]
	}
	return id, "", ""
}
