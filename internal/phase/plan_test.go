package phase

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string, annotations map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	if kind == "CustomResourceDefinition" {
		o.SetAPIVersion("apiextensions.k8s.io/v1")
	}
	if kind == "Job" {
		o.SetAPIVersion("batch/v1")
	}
	o.SetKind(kind)
	if strings.HasSuffix(name, "-") {
		o.SetGenerateName(name)
	} else {
		o.SetName(name)
	}
	o.SetAnnotations(annotations)
	return o
}

func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		n := o.GetName()
		if n == "" {
			n = o.GetGenerateName()
		}
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

func hookNames(hs []Hook) string {
	var objs []*unstructured.Unstructured
	for _, h := range hs {
		objs = append(objs, h.Object)
	}
	return names(objs)
}

func TestPlanWaves(t *testing.T) {
	p, err := New([]*unstructured.Unstructured{
		obj("ConfigMap", "late", map[string]string{"gitsync.dev/sync-wave": "2"}),
		obj("ConfigMap", "default", nil),
		obj("ConfigMap", "early", map[string]string{"argocd.argoproj.io/sync-wave": "-1"}),
		obj("ConfigMap", "own-wins", map[string]string{"gitsync.dev/sync-wave": "2", "argocd.argoproj.io/sync-wave": "-5"}),
		obj("Namespace", "ns", map[string]string{"gitsync.dev/sync-wave": "3"}),
		obj("CustomResourceDefinition", "crd", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range p.Waves {
		got = append(got, strings.TrimSpace(strings.Join([]string{itoa(w.Number), names(w.Objects)}, ":")))
	}
	want := "-1:crd,ns,early 0:default 2:late,own-wins"
	if strings.Join(got, " ") != want {
		t.Fatalf("waves = %q, want %q", strings.Join(got, " "), want)
	}
	if !p.Ordered() || len(p.Objects()) != 6 {
		t.Fatalf("Ordered=%v objects=%d", p.Ordered(), len(p.Objects()))
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	return string(rune('0' + n))
}

func TestPlanHooksFromEachEcosystem(t *testing.T) {
	p, err := New([]*unstructured.Unstructured{
		obj("Job", "migrate-", map[string]string{"gitsync.dev/hook": "PreSync", "gitsync.dev/hook-delete-policy": "HookSucceeded"}),
		obj("Job", "argo-pre", map[string]string{"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/sync-wave": "-1"}),
		obj("Job", "helm-pre", map[string]string{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "5",
			"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}),
		obj("Job", "smoke", map[string]string{"argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/hook-delete-policy": "HookFailed"}),
		obj("Job", "helm-post", map[string]string{"helm.sh/hook": "post-upgrade"}),
		obj("Pod", "helm-test", map[string]string{"helm.sh/hook": "test"}),
		obj("ConfigMap", "skipped", map[string]string{"gitsync.dev/hook": "Skip"}),
		obj("Job", "both", map[string]string{"gitsync.dev/hook": "Sync,SyncFail"}),
		obj("ConfigMap", "main", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ phase, got, want string }{
		{"PreSync", hookNames(p.PreSync), "argo-pre,migrate-,helm-pre"},
		{"Sync", hookNames(p.Sync), "both"},
		{"PostSync", hookNames(p.PostSync), "helm-post,smoke"},
		{"SyncFail", hookNames(p.SyncFail), "both"},
		{"Skipped", names(p.Skipped), "helm-test,skipped"},
		{"main", names(p.Objects()), "main"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.phase, c.got, c.want)
		}
	}
	policies := map[string]string{}
	for _, h := range p.Hooks() {
		policies[h.Object.GetName()+h.Object.GetGenerateName()] = strings.Join(h.DeletePolicies, ",")
	}
	for name, want := range map[string]string{
		"migrate-": "HookSucceeded", "argo-pre": "BeforeHookCreation",
		"helm-pre": "BeforeHookCreation,HookSucceeded", "smoke": "HookFailed",
	} {
		if policies[name] != want {
			t.Errorf("policies of %s = %q, want %q", name, policies[name], want)
		}
	}
}

func TestPlanRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct {
		annotations map[string]string
		want        string
	}{
		{map[string]string{"gitsync.dev/sync-wave": "one"}, `annotation gitsync.dev/sync-wave: "one" is not an integer`},
		{map[string]string{"gitsync.dev/hook": "PreDelete"}, `unsupported hook "PreDelete"`},
		{map[string]string{"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "Never"}, `unsupported delete policy "Never"`},
		{map[string]string{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "x"}, `helm.sh/hook-weight: "x" is not an integer`},
		{map[string]string{"helm.sh/hook": "post-render"}, `unsupported hook "post-render"`},
	} {
		_, err := New([]*unstructured.Unstructured{obj("ConfigMap", "bad", c.annotations)})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ConfigMap//bad") {
			t.Errorf("%v: err = %v, want it to name the object and say %q", c.annotations, err, c.want)
		}
	}
}

func TestPlanUnorderedSetIsOneWave(t *testing.T) {
	p, err := New([]*unstructured.Unstructured{obj("ConfigMap", "a", nil), obj("Namespace", "n", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ordered() || len(p.Waves) != 1 || names(p.Waves[0].Objects) != "n,a" {
		t.Fatalf("plan = %+v", p)
	}
}

// Hooks of one event and weight go in Helm's kind install order, then by name: the
// ServiceAccount and RBAC a Job runs as exist before it (alphabetical order by kind would
// put the Job first).
func TestPlanHooksInHelmOrder(t *testing.T) {
	helm := func(weight string) map[string]string {
		return map[string]string{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": weight}
	}
	p, err := New([]*unstructured.Unstructured{
		obj("Job", "b-check", helm("0")),
		obj("RoleBinding", "a-check", helm("0")),
		obj("Widget", "z-custom", helm("0")),
		obj("Role", "a-check", helm("0")),
		obj("ClusterRoleBinding", "a-check", helm("0")),
		obj("Job", "a-check", helm("0")),
		obj("ClusterRole", "a-check", helm("0")),
		obj("Gadget", "y-custom", helm("0")),
		obj("ServiceAccount", "a-check", helm("0")),
		obj("ConfigMap", "first", helm("-5")),
		obj("ServiceAccount", "later", helm("3")),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range p.PreSync {
		got = append(got, h.Object.GetKind()+"/"+h.Object.GetName())
	}
	want := "ConfigMap/first ServiceAccount/a-check ClusterRole/a-check ClusterRoleBinding/a-check " +
		"Role/a-check RoleBinding/a-check Job/a-check Job/b-check Gadget/y-custom Widget/z-custom ServiceAccount/later"
	if strings.Join(got, " ") != want {
		t.Fatalf("PreSync order:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// Only CRDs and Namespaces head the first wave (and go before PreSync hooks); a
// ClusterRole waits for its wave like any object.
func TestPlanDefinitionsAreCRDsAndNamespaces(t *testing.T) {
	p, err := New([]*unstructured.Unstructured{
		obj("ConfigMap", "early", map[string]string{"gitsync.dev/sync-wave": "-1"}),
		obj("ClusterRole", "reader", map[string]string{"gitsync.dev/sync-wave": "2"}),
		obj("CustomResourceDefinition", "widgets.example.com", map[string]string{"gitsync.dev/sync-wave": "3"}),
		obj("Namespace", "team", nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p.Waves[0].Objects); got != "team,widgets.example.com,early" {
		t.Fatalf("first wave: %s", got)
	}
	if got := names(clusterDefinitions(p)); got != "team,widgets.example.com" {
		t.Fatalf("definitions before PreSync: %s", got)
	}
	if got := names(p.Waves[len(p.Waves)-1].Objects); got != "reader" {
		t.Fatalf("last wave: %s", got)
	}
}
