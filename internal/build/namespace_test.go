package build

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

func crd(group, kind, scope string) *unstructured.Unstructured {
	o := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "things."+group)
	o.Object["spec"] = map[string]any{
		"group": group,
		"scope": scope,
		"names": map[string]any{"kind": kind, "plural": "things"},
	}
	return o
}

// builtinScopes answers like a RESTMapper that knows a few built-in kinds.
func builtinScopes(calls *int) func(schema.GroupKind) (bool, error) {
	known := map[schema.GroupKind]bool{
		{Kind: "ConfigMap"}:                                               true,
		{Kind: "Namespace"}:                                               false,
		{Group: "apps", Kind: "Deployment"}:                               true,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:         false,
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: false,
	}
	return func(gk schema.GroupKind) (bool, error) {
		*calls++
		namespaced, ok := known[gk]
		if !ok {
			return false, &meta.NoKindMatchError{GroupKind: gk}
		}
		return namespaced, nil
	}
}

func TestSetDefaultNamespace(t *testing.T) {
	tests := []struct {
		name    string
		objs    []*unstructured.Unstructured
		want    []string // namespace of each object after the call
		wantErr string
	}{
		{
			name: "namespaced without namespace gets the default",
			objs: []*unstructured.Unstructured{object("v1", "ConfigMap", "", "a"), object("apps/v1", "Deployment", "", "d")},
			want: []string{"apps", "apps"},
		},
		{
			name: "namespaced with a namespace keeps it",
			objs: []*unstructured.Unstructured{object("v1", "ConfigMap", "team", "a")},
			want: []string{"team"},
		},
		{
			name: "cluster-scoped objects have none, even if written",
			objs: []*unstructured.Unstructured{
				object("v1", "Namespace", "", "team"),
				object("rbac.authorization.k8s.io/v1", "ClusterRole", "oops", "reader"),
			},
			want: []string{"", ""},
		},
		{
			name: "custom resource of a namespaced CRD in the same objects",
			objs: []*unstructured.Unstructured{
				crd("example.com", "Widget", "Namespaced"),
				object("example.com/v1", "Widget", "", "w"),
				object("example.com/v1alpha1", "Widget", "other", "w2"),
			},
			want: []string{"", "apps", "other"},
		},
		{
			name: "custom resource of a cluster-scoped CRD in the same objects",
			objs: []*unstructured.Unstructured{
				object("example.com/v1", "Gadget", "written", "g"),
				crd("example.com", "Gadget", "Cluster"),
			},
			want: []string{"", ""},
		},
		{
			name:    "unknown kind without CRD",
			objs:    []*unstructured.Unstructured{object("v1", "ConfigMap", "", "a"), object("example.com/v1", "Mystery", "", "m")},
			wantErr: `Mystery.example.com m: cannot tell whether Mystery.example.com is namespaced: no matches for kind "Mystery" in group "example.com" (is its CustomResourceDefinition installed?`,
		},
		{
			name: "same object once the namespace is defaulted",
			objs: []*unstructured.Unstructured{
				object("v1", "ConfigMap", "", "other"),
				object("v1", "ConfigMap", "", "web"),
				object("v1", "ConfigMap", "apps", "web"),
			},
			wantErr: "ConfigMap apps/web is defined twice once namespaces are defaulted: " +
				"as object 2 of the render (without a namespace, defaulted to apps) and as object 3 (with namespace apps)",
		},
		{
			name: "same cluster-scoped object once the namespace is cleared",
			objs: []*unstructured.Unstructured{
				object("rbac.authorization.k8s.io/v1", "ClusterRole", "team", "reader"),
				object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
			},
			wantErr: "ClusterRole.rbac.authorization.k8s.io reader is defined twice once namespaces are defaulted: " +
				"as object 1 of the render (with namespace team, cleared: the kind is cluster-scoped) and as object 2 (without a namespace)",
		},
		{
			name: "same name in other namespaces or of other kinds is not a duplicate",
			objs: []*unstructured.Unstructured{
				object("v1", "ConfigMap", "", "web"),
				object("v1", "ConfigMap", "other", "web"),
				object("apps/v1", "Deployment", "", "web"),
				crd("example.com", "Widget", "Namespaced"),
				object("example.com/v1", "Widget", "", "web"),
			},
			want: []string{"apps", "other", "apps", "", "apps"},
		},
		{
			name:    "CRD without a valid scope",
			objs:    []*unstructured.Unstructured{crd("example.com", "Widget", "")},
			wantErr: `spec.scope must be Namespaced or Cluster, not ""`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			calls := 0
			err := SetDefaultNamespace(tt.objs, "apps", builtinScopes(&calls))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got := make([]string, len(tt.objs))
			for i, o := range tt.objs {
				got[i] = o.GetNamespace()
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSetDefaultNamespaceAsksOncePerKind(t *testing.T) {
	g := NewWithT(t)
	calls := 0
	objs := []*unstructured.Unstructured{
		object("v1", "ConfigMap", "", "a"),
		object("v1", "ConfigMap", "", "b"),
		object("v1", "ConfigMap", "", "c"),
		crd("example.com", "Widget", "Namespaced"),
		object("example.com/v1", "Widget", "", "w"),
	}
	g.Expect(SetDefaultNamespace(objs, "apps", builtinScopes(&calls))).To(Succeed())
	g.Expect(calls).To(Equal(2), "ConfigMap once, the CRD itself once, Widget from its CRD")
}

func TestSetDefaultNamespaceErrorWrapsLookup(t *testing.T) {
	g := NewWithT(t)
	calls := 0
	err := SetDefaultNamespace([]*unstructured.Unstructured{object("example.com/v1", "Mystery", "", "m")}, "apps", builtinScopes(&calls))
	var noMatch *meta.NoKindMatchError
	g.Expect(errors.As(err, &noMatch)).To(BeTrue(), "the mapper's error is wrapped")
	g.Expect(SetDefaultNamespace([]*unstructured.Unstructured{object("v1", "ConfigMap", "", "a")}, "apps", nil)).
		To(MatchError(ContainSubstring("cannot tell whether ConfigMap is namespaced")))
}

// The held-out fault: one file without a namespace, one with the target namespace.
// Both build (they differ as written); defaulting the namespace makes them one object.
func TestBuildThenDefaultNamespaceRefusesDuplicates(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"plain": {
			"app/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: a}\n",
			"app/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: apps}\ndata: {v: b}\n",
		},
		"kustomize": {
			"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
			"app/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {v: a}\n",
			"app/b.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: apps}\ndata: {v: b}\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, files)
			objs, err := Build(root, "app")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveLen(2))
			calls := 0
			err = SetDefaultNamespace(objs, "apps", builtinScopes(&calls))
			g.Expect(err).To(MatchError(ContainSubstring("ConfigMap apps/web is defined twice once namespaces are defaulted")))
			g.Expect(err.Error()).To(ContainSubstring("without a namespace, defaulted to apps"))
			g.Expect(err.Error()).To(ContainSubstring("with namespace apps"))
		})
	}
}
