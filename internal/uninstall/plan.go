package uninstall

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/install"
)

// managerLabel is the label of gitsync's manager workloads (config/manager, the chart).
const managerLabel = "app.kubernetes.io/name"

// finalizerPrefix: every finalizer gitsync sets starts with it.
var finalizerPrefix = gitsyncv1.GroupVersion.Group + "/"

// plan is what an uninstall does, worked out before anything is changed.
type plan struct {
	// managers are the manager workloads to stop first.
	managers []client.Object
	// crds are gitsync's CustomResourceDefinitions (spec.group gitsync.dev).
	crds []*apiextensionsv1.CustomResourceDefinition
	// finalized are the custom resources that carry one of gitsync's finalizers.
	finalized []*unstructured.Unstructured
	// applications counts the Applications.
	applications int
	// unsuspended are the Applications whose spec.suspend is not set.
	unsuspended []*gitsyncv1.Application
	// leftInPlace are the managed objects (inventory entries of every Application) that
	// are not gitsync's own: they stay.
	leftInPlace []object.ObjMetadata
	// own are the other objects of gitsync's install, in apply order (deleted in reverse).
	own []*unstructured.Unstructured
	// keptNamespaces are namespaces of own that hold objects which must stay, with why:
	// deleting a namespace deletes what is in it.
	keptNamespaces map[string]string
}

// makePlan reads the cluster: the manager workloads, the CRDs of gitsync.dev and their
// custom resources, the Applications' inventories, which objects of gitsync's own
// manifests exist, and whether its namespace holds managed objects.
func makePlan(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, keepCRDs bool) (*plan, error) {
	p := &plan{keptNamespaces: map[string]string{}}
	if err := p.findManagers(ctx, c); err != nil {
		return nil, err
	}
	crNamespaces, err := p.findCustomResources(ctx, c)
	if err != nil {
		return nil, err
	}
	ownIDs, err := p.findOwn(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := p.readInventories(ctx, c, ownIDs, keepCRDs); err != nil {
		return nil, err
	}
	for _, obj := range p.own {
		if obj.GetKind() != "Namespace" {
			continue
		}
		name := obj.GetName()
		example, err := managedIn(ctx, c, dc, name, func(id object.ObjMetadata) bool {
			return ownIDs[id] || (!keepCRDs && id.GroupKind.Group == gitsyncv1.GroupVersion.Group)
		})
		if err != nil {
			return nil, err
		}
		switch {
		case example != "":
			p.keptNamespaces[name] = "it holds objects that gitsync managed (" + example + ")"
		case keepCRDs && crNamespaces[name] > 0:
			p.keptNamespaces[name] = fmt.Sprintf("it holds %d gitsync custom resources (--keep-crds)", crNamespaces[name])
		}
	}
	return p, nil
}

// findManagers lists the Deployments and StatefulSets that gitsync installed as its
// manager (config/default's, the chart's, a sharded install's): labelled
// app.kubernetes.io/name=gitsync and running as a service account that one of the
// manager ClusterRoleBindings binds (or as gitsync in config/default's namespace, when
// the bindings are gone already). A workload of that label elsewhere, such as a tenant's
// own Deployment named gitsync, is not gitsync's and is left alone: only a cluster admin
// can bind a ClusterRole.
func (p *plan) findManagers(ctx context.Context, c client.Client) error {
	accounts, err := managerAccounts(ctx, c)
	if err != nil {
		return err
	}
	runsAsManager := func(namespace string, pod corev1.PodSpec) bool {
		sa := pod.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		return accounts[types.NamespacedName{Namespace: namespace, Name: sa}]
	}
	deployments := &appsv1.DeploymentList{}
	if err := c.List(ctx, deployments, client.MatchingLabels{managerLabel: "gitsync"}); err != nil {
		return fmt.Errorf("listing gitsync's manager: %w", err)
	}
	for i := range deployments.Items {
		if d := &deployments.Items[i]; runsAsManager(d.Namespace, d.Spec.Template.Spec) {
			p.managers = append(p.managers, d)
		}
	}
	statefulSets := &appsv1.StatefulSetList{}
	if err := c.List(ctx, statefulSets, client.MatchingLabels{managerLabel: "gitsync"}); err != nil {
		return fmt.Errorf("listing gitsync's manager: %w", err)
	}
	for i := range statefulSets.Items {
		if s := &statefulSets.Items[i]; runsAsManager(s.Namespace, s.Spec.Template.Spec) {
			p.managers = append(p.managers, s)
		}
	}
	return nil
}

// managerAccounts are the service accounts gitsync's manager runs as: the subjects of
// the ClusterRoleBindings of install's manager roles, and the manager's account of
// config/default.
func managerAccounts(ctx context.Context, c client.Client) (map[types.NamespacedName]bool, error) {
	accounts := map[types.NamespacedName]bool{}
	objs, err := install.Manifests("")
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			sa, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName")
			accounts[types.NamespacedName{Namespace: obj.GetNamespace(), Name: sa}] = true
		}
	}
	for _, name := range install.ManagerRoles {
		binding := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, binding); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading ClusterRoleBinding %s: %w", name, err)
			}
			continue
		}
		for _, s := range binding.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind {
				accounts[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = true
			}
		}
	}
	return accounts, nil
}

// findCustomResources lists the CRDs of gitsync.dev and, of their objects, those with
// one of gitsync's finalizers; it returns how many objects each namespace holds.
func (p *plan) findCustomResources(ctx context.Context, c client.Client) (map[string]int, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		return nil, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	perNamespace := map[string]int{}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Spec.Group != gitsyncv1.GroupVersion.Group {
			continue
		}
		p.crds = append(p.crds, crd)
		items, err := customResources(ctx, c, crd)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			perNamespace[item.GetNamespace()]++
			if hasGitsyncFinalizer(item) {
				p.finalized = append(p.finalized, item)
			}
		}
	}
	return perNamespace, nil
}

// findOwn reads which objects of gitsync's install (config/default) exist, but the CRDs
// and the Deployment (found by group and by label), and returns the identities of all of
// them.
func (p *plan) findOwn(ctx context.Context, c client.Client) (map[object.ObjMetadata]bool, error) {
	// Both RBAC variants: an install may have bound either manager role.
	objs, err := install.Manifests("")
	if err != nil {
		return nil, err
	}
	full, err := install.ManifestsWith("", false)
	if err != nil {
		return nil, err
	}
	for _, obj := range full {
		if obj.GetKind() == "ClusterRole" || obj.GetKind() == "ClusterRoleBinding" {
			objs = append(objs, obj)
		}
	}
	ids := map[object.ObjMetadata]bool{}
	for _, obj := range objs {
		if ids[object.UnstructuredToObjMetadata(obj)] {
			continue
		}
		ids[object.UnstructuredToObjMetadata(obj)] = true
		switch obj.GetKind() {
		case "CustomResourceDefinition", "Deployment":
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading %s: %w", install.Subject(obj), err)
			}
			continue
		}
		p.own = append(p.own, live)
	}
	return ids, nil
}

// readInventories counts the Applications and lists their managed objects that are not
// part of gitsync itself (its install objects, and its custom resources unless the
// CRDs are kept).
func (p *plan) readInventories(ctx context.Context, c client.Client, own map[object.ObjMetadata]bool, keepCRDs bool) error {
	if !p.hasKind(gitsyncv1.ApplicationKind) {
		return nil
	}
	apps := &gitsyncv1.ApplicationList{}
	if err := c.List(ctx, apps); err != nil {
		return fmt.Errorf("listing Applications: %w", err)
	}
	p.applications = len(apps.Items)
	seen := map[object.ObjMetadata]bool{}
	for i := range apps.Items {
		app := &apps.Items[i]
		if !app.Spec.Suspend {
			p.unsuspended = append(p.unsuspended, app)
		}
		if app.Status.Inventory == nil {
			continue
		}
		for _, e := range app.Status.Inventory.Entries {
			id, err := object.ParseObjMetadata(e.ID)
			if err != nil || seen[id] || own[id] {
				continue
			}
			seen[id] = true
			if id.GroupKind.Group == gitsyncv1.GroupVersion.Group && !keepCRDs {
				continue // deleted with the CRDs
			}
			p.leftInPlace = append(p.leftInPlace, id)
		}
	}
	sort.Slice(p.leftInPlace, func(i, j int) bool { return p.leftInPlace[i].String() < p.leftInPlace[j].String() })
	return nil
}

// hasKind tells whether a CRD of gitsync serves kind.
func (p *plan) hasKind(kind string) bool {
	for _, crd := range p.crds {
		if crd.Spec.Names.Kind == kind {
			return true
		}
	}
	return false
}

// customResources lists every object of crd, in every namespace, at its storage version.
func customResources(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) ([]*unstructured.Unstructured, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage || (version == "" && v.Served) {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing %s: %w", crd.Spec.Names.Plural, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func hasGitsyncFinalizer(obj client.Object) bool {
	for _, f := range obj.GetFinalizers() {
		if strings.HasPrefix(f, finalizerPrefix) {
			return true
		}
	}
	return false
}
