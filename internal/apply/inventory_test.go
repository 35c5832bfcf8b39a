package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEntryOf(t *testing.T) {
	g := NewWithT(t)
	e := EntryOf(deployment(t, "ns", "web"))
	g.Expect(e).To(Equal(Entry{ID: "ns_web_apps_Deployment", Version: "apps/v1"}))
	g.Expect(e.Subject()).To(Equal("Deployment/ns/web"))
	gvk, err := e.GroupVersionKind()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gvk).To(Equal(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}))

	// Flux stores the bare version.
	gvk, err = Entry{ID: "ns_web_apps_Deployment", Version: "v1"}.GroupVersionKind()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gvk).To(Equal(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}))

	ns := Entry{ID: "_team__Namespace", Version: "v1"}
	g.Expect(ns.Subject()).To(Equal("Namespace/team"))
	m, err := ns.ObjMetadata()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Name).To(Equal("team"))
	g.Expect(m.Namespace).To(BeEmpty())
	g.Expect(m.GroupKind).To(Equal(schema.GroupKind{Kind: "Namespace"}))

	_, err = Entry{ID: "garbage", Version: "v1"}.ObjMetadata()
	g.Expect(err).To(MatchError(ContainSubstring(`parsing inventory entry "garbage"`)))
}

func TestStale(t *testing.T) {
	var (
		crd        = Entry{ID: "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition", Version: "apiextensions.k8s.io/v1"}
		namespace  = Entry{ID: "_team__Namespace", Version: "v1"}
		role       = Entry{ID: "_reader_rbac.authorization.k8s.io_ClusterRole", Version: "rbac.authorization.k8s.io/v1"}
		configMapA = Entry{ID: "team_a__ConfigMap", Version: "v1"}
		configMapB = Entry{ID: "team_b__ConfigMap", Version: "v1"}
		deploy     = Entry{ID: "team_web_apps_Deployment", Version: "apps/v1"}
		widget     = Entry{ID: "team_w_example.com_Widget", Version: "example.com/v1"}
		webhook    = Entry{ID: "_hook_admissionregistration.k8s.io_ValidatingWebhookConfiguration", Version: "admissionregistration.k8s.io/v1"}
		garbage    = Entry{ID: "garbage", Version: "v1"}
	)
	tests := []struct {
		name     string
		old, new []Entry
		want     []Entry
	}{
		{name: "nothing before", old: nil, new: []Entry{configMapA}, want: []Entry{}},
		{name: "nothing removed", old: []Entry{configMapA, deploy}, new: []Entry{deploy, configMapA}, want: []Entry{}},
		{name: "everything removed", old: []Entry{configMapA}, new: nil, want: []Entry{configMapA}},
		{
			name: "a new version is the same object",
			old:  []Entry{{ID: deploy.ID, Version: "apps/v1beta1"}},
			new:  []Entry{deploy},
			want: []Entry{},
		},
		{
			name: "dependents before what they depend on",
			old:  []Entry{crd, namespace, role, configMapA, configMapB, deploy, widget, webhook},
			new:  []Entry{configMapB},
			want: []Entry{webhook, widget, deploy, configMapA, role, namespace, crd},
		},
		{
			name: "order of old does not matter",
			old:  []Entry{crd, widget, namespace, deploy, configMapA},
			new:  nil,
			want: []Entry{widget, deploy, configMapA, namespace, crd},
		},
		{
			name: "duplicates and unparsable entries",
			old:  []Entry{garbage, configMapA, configMapA},
			new:  nil,
			want: []Entry{configMapA, garbage},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Stale(tt.old, tt.new)).To(Equal(tt.want))
		})
	}
}

func TestResultCount(t *testing.T) {
	g := NewWithT(t)
	r := &Result{Changes: []Change{{Action: "created"}, {Action: "unchanged"}, {Action: "created"}}}
	g.Expect(r.Count("created")).To(Equal(2))
	g.Expect(r.Count("deleted")).To(Equal(0))
	g.Expect((*Result)(nil).Count("created")).To(Equal(0))
}

func TestStages(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName("x")
		return u
	}
	cm := obj("v1", "ConfigMap")
	ns := obj("v1", "Namespace")
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition")
	class := obj("storage.k8s.io/v1", "StorageClass")
	cases := []struct {
		objs []*unstructured.Unstructured
		want int
	}{
		{nil, 0},
		{[]*unstructured.Unstructured{cm, cm}, 1},
		{[]*unstructured.Unstructured{ns, crd}, 1},
		{[]*unstructured.Unstructured{ns, cm}, 2},
		{[]*unstructured.Unstructured{crd, class, cm}, 3},
	}
	for i, tc := range cases {
		if got := stages(tc.objs); got != tc.want {
			t.Errorf("case %d: stages = %d, want %d", i, got, tc.want)
		}
	}
}
