package ui

import (
	"context"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// Node is one object of an application's resource tree.
type Node struct {
	// ID is the object's subject, "Kind/namespace/name".
	ID        string  `json:"id"`
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	Health    string  `json:"health"`
	Drifted   bool    `json:"drifted,omitempty"`
	Managed   bool    `json:"managed"`
	Children  []*Node `json:"children,omitempty"`
}

// childKinds are looked up (in the namespaces of the inventory) as owned children.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Version: "v1", Kind: "Pod"},
	{Group: "batch", Version: "v1", Kind: "Job"},
}

// readTimeout bounds the wait for a kind's informer the first time it is read.
const readTimeout = 10 * time.Second

// healthOfObject is an object's health by kstatus, as for the inventory's objects.
func healthOfObject(obj *unstructured.Unstructured) string {
	h, _ := apply.KstatusHealth(obj)
	return h
}

// tree is the inventory (sorted by kind, namespace, name) with each object's owned
// children below it, all read from the cache. It returns the number of nodes too.
func (s *Server) tree(ctx context.Context, app *gitsyncv1.Application) ([]*Node, int, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	drifted := map[string]bool{}
	for _, d := range app.Status.Drift {
		drifted[d.Object] = true
	}
	var nodes []*Node
	byUID := map[types.UID]*Node{}
	namespaces := map[string]bool{}
	if app.Status.Inventory != nil {
		for _, ie := range app.Status.Inventory.Entries {
			e := apply.Entry{ID: ie.ID, Version: ie.V}
			n, uid := s.inventoryNode(ctx, e)
			n.Drifted = drifted[n.ID]
			nodes = append(nodes, n)
			if uid != "" {
				byUID[uid] = n
			}
			if n.Namespace != "" {
				namespaces[n.Namespace] = true
			}
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Kind != nodes[j].Kind {
			return nodes[i].Kind < nodes[j].Kind
		}
		return nodes[i].ID < nodes[j].ID
	})
	count := len(nodes)
	// Children become nodes first, then hang under their owner (a Pod under its
	// ReplicaSet under the Deployment). Kinds without owners in the tree are skipped.
	type child struct {
		node *Node
		refs []types.UID
	}
	var children []child
	for ns := range namespaces {
		for _, gvk := range childKinds {
			if !s.canRead(ctx, gvk) {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := s.cache.List(ctx, list, client.InNamespace(ns)); err != nil {
				continue // not allowed or not served: the tree shows what it can
			}
			for i := range list.Items {
				item := &list.Items[i]
				refs := item.GetOwnerReferences()
				if len(refs) == 0 {
					continue
				}
				n := &Node{ID: gvk.Kind + "/" + ns + "/" + item.GetName(), Kind: gvk.Kind, Namespace: ns,
					Name: item.GetName(), Health: healthOfObject(item)}
				c := child{node: n}
				for _, r := range refs {
					c.refs = append(c.refs, r.UID)
				}
				if _, ok := byUID[item.GetUID()]; !ok {
					byUID[item.GetUID()] = n
				}
				children = append(children, c)
			}
		}
	}
	for _, c := range children {
		for _, uid := range c.refs {
			if parent := byUID[uid]; parent != nil && parent != c.node {
				parent.Children = append(parent.Children, c.node)
				count++
				break
			}
		}
	}
	return nodes, count, nil
}

// inventoryNode reads one inventory object from the cache (Secrets as metadata only).
func (s *Server) inventoryNode(ctx context.Context, e apply.Entry) (*Node, types.UID) {
	n := &Node{ID: e.Subject(), Health: gitsyncv1.HealthStatusUnknown, Managed: true}
	m, err := e.ObjMetadata()
	if err != nil {
		n.Kind, n.Name = "Unknown", e.ID
		return n, ""
	}
	n.Kind, n.Namespace, n.Name = m.GroupKind.Kind, m.Namespace, m.Name
	gvk, err := e.GroupVersionKind()
	if err != nil {
		return n, ""
	}
	if !s.canRead(ctx, gvk) {
		return n, ""
	}
	key := client.ObjectKey{Namespace: m.Namespace, Name: m.Name}
	if gvk.Group == "" && gvk.Kind == "Secret" {
		meta := metadataOf(gvk)
		switch err := s.cache.Get(ctx, key, meta); {
		case apierrors.IsNotFound(err):
			n.Health = gitsyncv1.HealthStatusMissing
		case err == nil:
			n.Health = gitsyncv1.HealthStatusHealthy
		}
		return n, meta.GetUID()
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	switch err := s.cache.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		n.Health = gitsyncv1.HealthStatusMissing
		return n, ""
	case err != nil:
		return n, ""
	}
	n.Health = healthOfObject(obj)
	return n, obj.GetUID()
}
