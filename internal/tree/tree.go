// Package tree builds an Application's resource tree, the one that `gitsync tree` and
// the web UI show: its inventory, what those objects own (ReplicaSets, Pods, Jobs), and
// the hooks of its last run, each judged healthy or not exactly as status.health judges
// it (internal/health's judge of the Application).
package tree

import (
	"context"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
)

// Node is one object of the tree.
type Node struct {
	// ID is the object's subject, "Kind/namespace/name".
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Health is the object's health.Status (the values of status.health.status).
	Health string `json:"health"`
	// Drifted: status.drift reports the object.
	Drifted bool `json:"drifted,omitempty"`
	// Managed: the object is in the inventory (not an owned child, not a hook).
	Managed bool `json:"managed"`
	// Hook is the phase of a hook of the last run (PreSync, Sync, PostSync, SyncFail).
	Hook     string  `json:"hook,omitempty"`
	Children []*Node `json:"children,omitempty"`
}

// Options tune Build.
type Options struct {
	// Children hangs owned objects (ReplicaSets, Pods, Jobs, ControllerRevisions,
	// EndpointSlices) under their owners, through ownerReferences.
	Children bool
	// Hooks adds the hooks of the last run (status.hooks) after the inventory.
	Hooks bool
	// CanRead, when set, tells whether a kind may be read; the objects of other kinds
	// are shown with health Unknown, and their children are not looked for.
	CanRead func(context.Context, schema.GroupVersionKind) bool
}

// ChildKinds are looked up, in the namespaces of the inventory, as owned children.
var ChildKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Version: "v1", Kind: "Pod"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "apps", Version: "v1", Kind: "ControllerRevision"},
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
}

// Build reads app's inventory through r (a cache or a direct client), one node per
// object sorted by kind then namespace/name, and returns the nodes and how many there are
// in all (children included). Secrets are read as metadata only.
func Build(ctx context.Context, r client.Reader, app *gitsyncv1.Application, opts Options) ([]*Node, int, error) {
	// A spec whose checks do not compile is judged by kstatus (the sync refuses it).
	judge, _ := health.For(app)
	drifted := map[string]bool{}
	for _, d := range app.Status.Drift {
		drifted[d.Object] = true
	}
	var nodes []*Node
	byUID := map[types.UID]*Node{}
	namespaces := map[string]bool{}
	for _, e := range apply.EntriesOf(app.Status.Inventory) {
		n, uid := inventoryNode(ctx, r, e, judge, opts.CanRead)
		n.Drifted = drifted[n.ID]
		nodes = append(nodes, n)
		if uid != "" {
			byUID[uid] = n
		}
		if n.Namespace != "" {
			namespaces[n.Namespace] = true
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Kind != nodes[j].Kind {
			return nodes[i].Kind < nodes[j].Kind
		}
		return nodes[i].Namespace+"/"+nodes[i].Name < nodes[j].Namespace+"/"+nodes[j].Name
	})
	count := len(nodes)
	if opts.Children {
		count += addChildren(ctx, r, byUID, namespaces, judge, opts.CanRead)
	}
	if opts.Hooks {
		for _, h := range app.Status.Hooks {
			nodes = append(nodes, hookNode(h))
			count++
		}
	}
	return nodes, count, nil
}

// inventoryNode reads one inventory object (Secrets as metadata only) and judges it.
func inventoryNode(ctx context.Context, r client.Reader, e apply.Entry, judge *health.Judge,
	canRead func(context.Context, schema.GroupVersionKind) bool) (*Node, types.UID) {
	n := &Node{ID: e.Subject(), Health: string(health.Unknown), Managed: true}
	m, err := e.ObjMetadata()
	if err != nil {
		n.Kind, n.Name = "Unknown", e.ID
		return n, ""
	}
	n.Kind, n.Namespace, n.Name = m.GroupKind.Kind, m.Namespace, m.Name
	gvk, err := e.GroupVersionKind()
	if err != nil || (canRead != nil && !canRead(ctx, gvk)) {
		return n, ""
	}
	key := client.ObjectKey{Namespace: m.Namespace, Name: m.Name}
	if gvk.Group == "" && gvk.Kind == "Secret" {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		switch err := r.Get(ctx, key, meta); {
		case apierrors.IsNotFound(err):
			n.Health = string(health.Missing)
		case err == nil:
			n.Health = string(health.Healthy) // a Secret has no status: kstatus calls it Current
		}
		return n, meta.GetUID()
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	switch err := r.Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		n.Health = string(health.Missing)
		return n, ""
	case err != nil:
		return n, ""
	}
	n.Health = string(judge.Object(obj).Status)
	return n, obj.GetUID()
}

// addChildren hangs the owned objects of the namespaces under their owners in byUID
// (a Pod under its ReplicaSet under the Deployment) and returns how many it hung.
func addChildren(ctx context.Context, r client.Reader, byUID map[types.UID]*Node, namespaces map[string]bool,
	judge *health.Judge, canRead func(context.Context, schema.GroupVersionKind) bool) int {
	type child struct {
		node *Node
		refs []types.UID
	}
	var children []child
	nsList := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nsList = append(nsList, ns)
	}
	sort.Strings(nsList)
	for _, ns := range nsList {
		for _, gvk := range ChildKinds {
			if canRead != nil && !canRead(ctx, gvk) {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
				continue // not allowed or not served: the tree shows what it can
			}
			for i := range list.Items {
				item := &list.Items[i]
				refs := item.GetOwnerReferences()
				if len(refs) == 0 {
					continue
				}
				n := &Node{ID: gvk.Kind + "/" + ns + "/" + item.GetName(), Kind: gvk.Kind, Namespace: ns,
					Name: item.GetName(), Health: string(judge.Object(item).Status)}
				c := child{node: n}
				for _, ref := range refs {
					c.refs = append(c.refs, ref.UID)
				}
				if _, ok := byUID[item.GetUID()]; !ok {
					byUID[item.GetUID()] = n
				}
				children = append(children, c)
			}
		}
	}
	hung := 0
	for _, c := range children {
		for _, uid := range c.refs {
			if parent := byUID[uid]; parent != nil && parent != c.node {
				parent.Children = append(parent.Children, c.node)
				hung++
				break
			}
		}
	}
	return hung
}

// hookNode is a hook of the last run, its result as health.
func hookNode(h gitsyncv1.HookStatus) *Node {
	n := &Node{ID: h.Kind + "/" + h.Namespace + "/" + h.Name, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name, Hook: h.Phase}
	if h.Namespace == "" {
		n.ID = h.Kind + "/" + h.Name
	}
	n.Health = string(health.Hook(h.Result))
	return n
}
