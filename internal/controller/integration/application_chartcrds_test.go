package integration

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
)

// stackChart is a chart with a crds/ folder (two CRDs of group), custom resources of both
// in templates/, and pre-install/pre-upgrade hooks of equal weight across a
// ServiceAccount, a Role, a RoleBinding, a ClusterRole and a Job (written Job first).
func stackChart(group, clusterRole, greeting string) map[string]string {
	crd := func(kind, plural string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[3]s
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s, listKind: %[1]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, kind, plural, group, strings.ToLower(kind))
	}
	hook := `annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "0"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded`
	return map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: stack\nversion: 0.1.0\n",
		"values.yaml":           fmt.Sprintf("size: 1\ngreeting: %s\n", greeting),
		"crds/gadgets.yaml":     crd("Gadget", "gadgets"),
		"crds/gizmos.yaml":      crd("Gizmo", "gizmos"),
		"templates/crs.yaml":    fmt.Sprintf("apiVersion: %[1]s/v1\nkind: Gadget\nmetadata: {name: one}\nspec: {size: {{ .Values.size }}}\n---\napiVersion: %[1]s/v1\nkind: Gizmo\nmetadata: {name: two}\nspec: {size: {{ .Values.size }}}\n", group),
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stack-config}\ndata: {greeting: {{ .Values.greeting | quote }}}\n",
		"templates/hooks.yaml": fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: setup
  %[1]s
spec:
  backoffLimit: 0
  template:
    spec:
      serviceAccountName: setup
      restartPolicy: Never
      containers: [{name: run, image: example.com/setup:1}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: setup
  %[1]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: setup}
subjects: [{kind: ServiceAccount, name: setup}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: setup
  %[1]s
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %[2]s
  %[1]s
rules: [{apiGroups: [""], resources: [namespaces], verbs: [get]}]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: setup
  %[1]s
`, hook, clusterRole),
	}
}

// hookAudit records, from the test's own watches, when each hook object of an
// Application was created and deleted, and finishes each hook Job (as the Job
// controller would) a moment after it appears.
type hookAudit struct {
	mu    sync.Mutex
	start time.Time
	lines []auditLine
}

type auditLine struct {
	at   time.Duration
	rv   uint64 // the resourceVersion of the change: etcd's revision, one order for all kinds
	what string // "created Kind/name", "deleted Kind/name", "finished Job/name"
}

func (a *hookAudit) add(obj *unstructured.Unstructured, what string) {
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, auditLine{at: time.Since(a.start), rv: rv, what: what})
}

// snapshot returns the lines in the order the API server made the changes (separate
// watches may deliver them in another order).
func (a *hookAudit) snapshot() []auditLine {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := append([]auditLine{}, a.lines...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].rv < out[j].rv })
	return out
}

// what returns the lines' texts from index from on.
func whatOf(lines []auditLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.what
	}
	return out
}

func auditHooks(t *testing.T, ns, app string) *hookAudit {
	t.Helper()
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	a := &hookAudit{start: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	selector := metav1.ListOptions{LabelSelector: gitsyncv1.HookApplicationLabel + "=" + app}
	for _, r := range []struct {
		gvr        schema.GroupVersionResource
		kind       string
		namespaced bool
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "ServiceAccount", true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, "Role", true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "RoleBinding", true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "ClusterRole", false},
		{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "Job", true},
	} {
		var w watch.Interface
		if r.namespaced {
			w, err = dc.Resource(r.gvr).Namespace(ns).Watch(ctx, selector)
		} else {
			w, err = dc.Resource(r.gvr).Watch(ctx, selector)
		}
		if err != nil {
			t.Fatal(err)
		}
		kind := r.kind
		go func() {
			deleting, finished := map[types.UID]bool{}, map[types.UID]bool{}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				subject := kind + "/" + obj.GetName()
				succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
				switch {
				case ev.Type == watch.Added:
					a.add(obj, "created "+subject)
					if kind == "Job" {
						go func(name string) {
							time.Sleep(150 * time.Millisecond) // the hooks after it must wait for it
							_ = kubelet.FinishJob(ctx, env.Client, ns, name, true)
						}(obj.GetName())
					}
				case ev.Type == watch.Deleted || obj.GetDeletionTimestamp() != nil:
					if !deleting[obj.GetUID()] {
						deleting[obj.GetUID()] = true
						a.add(obj, "deleted "+subject)
					}
				case ev.Type == watch.Modified && succeeded > 0 && !finished[obj.GetUID()]:
					finished[obj.GetUID()] = true
					a.add(obj, "finished "+subject)
				}
			}
		}()
	}
	return a
}

// checkHookRun checks one run of the stack chart's hooks (the audit lines of that run):
// created in Helm's order, each waited for, and deleted (hook-succeeded) only once all
// of them succeeded, last created first.
func checkHookRun(g Gomega, run []string, clusterRole string) {
	g.Expect(run).To(Equal([]string{
		"created ServiceAccount/setup",
		"created ClusterRole/" + clusterRole,
		"created Role/setup",
		"created RoleBinding/setup",
		"created Job/setup",
		"finished Job/setup",
		"deleted Job/setup",
		"deleted RoleBinding/setup",
		"deleted Role/setup",
		"deleted ClusterRole/" + clusterRole,
		"deleted ServiceAccount/setup",
	}))
}

// uids reads the UIDs of the stack chart's CRDs and custom resources.
func stackUIDs(g Gomega, ns, group string) map[string]types.UID {
	ctx := context.Background()
	out := map[string]types.UID{}
	for _, plural := range []string{"gadgets", "gizmos"} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: plural + "." + group}, crd)).To(Succeed())
		out["crd/"+plural] = crd.GetUID()
	}
	for kind, name := range map[string]string{"Gadget": "one", "Gizmo": "two"} {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr)).To(Succeed())
		out[kind+"/"+name] = cr.GetUID()
	}
	return out
}

func sortedInventory(app *gitsyncv1.Application) []string {
	ids := inventoryIDs(app)
	sort.Strings(ids)
	return ids
}

// A chart's crds/ CRDs are created once and kept: a requested resync, a new commit and
// a spec change never prune them (nor the custom resources with them), the inventory
// stays the same, and each run of the hooks is in Helm's order.
func TestChartCRDsAreNeverPrunedAndHooksRunInHelmOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	group := ns + ".stack.example.org"
	clusterRole := ns + "-setup"
	files := prefixed("stack", stackChart(group, clusterRole, "hello"))
	f, sha := newAppFixtureIn(t, ns, files)
	audit := auditHooks(t, ns, "stack")
	f.app("stack", func(a *gitsyncv1.Application) { a.Spec.Path = "stack"; a.Spec.Prune = true })

	app := f.waitApplied("stack", sha)
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))
	uids := stackUIDs(g, ns, group)
	inventory := sortedInventory(app)
	g.Expect(inventory).To(ContainElements(
		"_gadgets."+group+"_apiextensions.k8s.io_CustomResourceDefinition",
		"_gizmos."+group+"_apiextensions.k8s.io_CustomResourceDefinition",
		ns+"_one_"+group+"_Gadget", ns+"_two_"+group+"_Gizmo"))
	g.Expect(inventory).To(HaveLen(5), "2 CRDs, 2 custom resources, 1 ConfigMap: hooks are not in the inventory")
	var runs [][]string
	g.Eventually(func(g Gomega) { checkHookRun(g, whatOf(audit.snapshot()), clusterRole) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	runs = append(runs, whatOf(audit.snapshot()))
	t.Logf("inventory after the first sync: %v", inventory)

	kept := func(step string) *gitsyncv1.Application {
		t.Helper()
		var app *gitsyncv1.Application
		g.Eventually(func(g Gomega) {
			app = f.get(g, "stack")
			g.Expect(sortedInventory(app)).To(Equal(inventory), step+": inventory")
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
		g.Expect(stackUIDs(g, ns, group)).To(Equal(uids), step+": CRDs and custom resources keep their UIDs")
		g.Expect(app.Status.History[0].Pruned).To(BeZero(), step)
		return app
	}
	nextRun := func(step string) {
		t.Helper()
		before := len(audit.snapshot())
		g.Eventually(func(g Gomega) {
			lines := whatOf(audit.snapshot())
			g.Expect(len(lines)).To(BeNumerically(">=", before+11))
			checkHookRun(g, lines[before:before+11], clusterRole)
		}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed(), step)
		runs = append(runs, whatOf(audit.snapshot())[before:])
	}

	// 1. A requested resync of the same revision that asks for the hooks again.
	f.edit(g, "stack", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "resync", gitsyncv1.RunHooksAnnotation: "resync"}
	})
	nextRun("requested resync")
	g.Eventually(func(g Gomega) string { return f.get(g, "stack").Status.LastHandledReconcileAt }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal("resync"))
	kept("requested resync")

	// 2. A new commit: an upgrade.
	files = prefixed("stack", stackChart(group, clusterRole, "hello again"))
	sha = f.repo.Commit("main", "new greeting", files)
	nextRun("new commit")
	f.waitApplied("stack", sha)
	g.Expect(f.configMap(g, "stack-config").Data).To(HaveKeyWithValue("greeting", "hello again"))
	kept("new commit")

	// 3. A spec change at the same revision.
	f.edit(g, "stack", func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{Values: &runtime.RawExtension{Raw: []byte(`{"size":2}`)}}
	})
	g.Eventually(func(g Gomega) {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"})
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "one"}, cr)).To(Succeed())
		size, _, _ := unstructured.NestedInt64(cr.Object, "spec", "size")
		g.Expect(size).To(BeEquivalentTo(2))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	app = kept("spec change")
	ready := app.Status.Conditions
	g.Expect(ready).To(ContainElement(HaveField("Type", gitsyncv1.ReadyCondition)))
	g.Expect(app.Status.Health.Status).To(Equal(gitsyncv1.HealthStatusHealthy))

	// The timeline of the hooks, for the record.
	for _, l := range audit.snapshot() {
		t.Logf("%6d ms  %s", l.at.Milliseconds(), l.what)
	}
	t.Logf("inventory after three more syncs: %v", sortedInventory(app))
}

// The same chart from a HelmRepository, served over HTTP and from an OCI registry: its
// CRDs survive a spec change.
func TestChartCRDsFromHelmRepositories(t *testing.T) {
	for _, kind := range []string{"http", "oci"} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			group := ns + ".stack.example.org"
			archive := chartserver.Package(t, "stack", stackChart(group, ns+"-setup", "hello"))
			var f *helmFixture
			if kind == "http" {
				srv := chartserver.NewRepo(t)
				srv.Add("stack", "0.1.0", archive)
				f = newHelmFixtureIn(t, ns, srv.URL, map[string][]byte{"ca.crt": srv.CA})
			} else {
				reg := chartserver.NewRegistry(t, "bob", "hunter2")
				reg.Push(t, "stack", "0.1.0", archive)
				f = newHelmFixtureIn(t, ns, reg.URL(), map[string][]byte{"username": []byte("bob"), "password": []byte("hunter2")})
			}
			audit := auditHooks(t, ns, "stack")
			f.chartApp("stack", "stack", "", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
			app := f.waitAppliedAt("stack", "stack@0.1.0")
			uids := stackUIDs(g, ns, group)
			inventory := sortedInventory(app)
			g.Expect(inventory).To(HaveLen(5))
			g.Eventually(func(g Gomega) { checkHookRun(g, whatOf(audit.snapshot()), ns+"-setup") }).
				WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())

			f.edit(g, "stack", func(a *gitsyncv1.Application) {
				a.Spec.Helm.Values = &runtime.RawExtension{Raw: []byte(`{"greeting":"changed"}`)}
			})
			g.Eventually(func(g Gomega) map[string]string { return f.configMap(g, "stack-config").Data }).
				WithTimeout(waitTimeout).WithPolling(pollInterval).Should(HaveKeyWithValue("greeting", "changed"))
			g.Eventually(func(g Gomega) []string { return sortedInventory(f.get(g, "stack")) }).
				WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(inventory))
			g.Expect(stackUIDs(g, ns, group)).To(Equal(uids))
		})
	}
}

// prefixed puts files under dir/.
func prefixed(dir string, files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for name, data := range files {
		out[dir+"/"+name] = data
	}
	return out
}
