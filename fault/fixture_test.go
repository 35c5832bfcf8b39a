package fault

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

const (
	pollInterval = 200 * time.Millisecond
	appName      = "app"
	repoName     = "repo"
)

// desired is what a commit holds: ConfigMaps (name → data) and Services (name → port),
// all without a namespace (they land in the Application's).
type desired struct {
	configMaps map[string]map[string]string
	services   map[string]int32
}

// files renders the commit's manifests, ConfigMaps and Services in two files.
func (d desired) files() map[string]string {
	var cms, svcs strings.Builder
	for _, name := range slices.Sorted(maps.Keys(d.configMaps)) {
		fmt.Fprintf(&cms, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
		data := d.configMaps[name]
		for _, k := range slices.Sorted(maps.Keys(data)) {
			fmt.Fprintf(&cms, "  %s: %q\n", k, data[k])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.services)) {
		fmt.Fprintf(&svcs, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: %s\nspec:\n  selector:\n    app: %s\n  ports:\n  - name: http\n    port: %d\n", name, name, d.services[name])
	}
	return map[string]string{"configmaps.yaml": cms.String(), "services.yaml": svcs.String()}
}

func (d desired) count() int { return len(d.configMaps) + len(d.services) }

// fixture is a Git server with one repository, a GitRepository and an Application (prune:
// true) of it in a namespace of the test's own.
type fixture struct {
	t    *testing.T
	ns   string
	srv  *gittest.Server
	repo *gittest.Repo
}

// newFixture commits files as the first revision and creates the GitRepository (polling
// every interval) and the Application; it returns the commit's sha.
func newFixture(t *testing.T, files map[string]string, interval time.Duration, mutate ...func(*gitsyncv1.Application)) (*fixture, string) {
	t.Helper()
	f := &fixture{t: t, ns: env.Namespace(t), srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("app")
	sha := f.repo.Commit("main", "first", files)
	ctx := context.Background()
	repo := &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: repoName, Namespace: f.ns},
		Spec: gitsyncv1.GitRepositorySpec{
			URL:      f.srv.HTTPURL("app"),
			Ref:      &gitsyncv1.GitRepositoryRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: interval},
			Timeout:  &metav1.Duration{Duration: 10 * time.Second},
		},
	}
	if err := env.Client.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: appName, Namespace: f.ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: repoName},
			Path:      "./",
			Prune:     true,
		},
	}
	for _, m := range mutate {
		m(app)
	}
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	// Before the Git server stops (cleanups run last first): the operator leaves the
	// test's objects alone once it ends.
	t.Cleanup(f.suspend)
	return f, sha
}

func (f *fixture) app(g Gomega) *gitsyncv1.Application {
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: appName}, app)).To(Succeed())
	return app
}

func (f *fixture) gitRepository(g Gomega) *gitsyncv1.GitRepository {
	repo := &gitsyncv1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: repoName}, repo)).To(Succeed())
	return repo
}

// revision is how status spells a commit of main.
func revision(sha string) string { return "main@sha1:" + sha }

// waitApplied waits until the Application is Ready and Synced at sha.
func (f *fixture) waitApplied(sha string, timeout time.Duration) *gitsyncv1.Application {
	f.t.Helper()
	var app *gitsyncv1.Application
	NewWithT(f.t).Eventually(func(g Gomega) {
		app = f.app(g)
		ready := apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision(sha)), "Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed())
	return app
}

// waitNotReady waits until the Application says Ready=False for revision sha with one of
// the reasons, and returns the condition.
func (f *fixture) waitNotReady(sha string, timeout time.Duration, reasons ...string) *metav1.Condition {
	f.t.Helper()
	var cond *metav1.Condition
	NewWithT(f.t).Eventually(func(g Gomega) {
		app := f.app(g)
		cond = apimeta.FindStatusCondition(app.Status.Conditions, gitsyncv1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(app.Status.LastAttemptedRevision).To(Equal(revision(sha)), "Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%s: %s", cond.Reason, cond.Message)
		g.Expect(reasons).To(ContainElement(cond.Reason), cond.Message)
	}).WithTimeout(timeout).WithPolling(pollInterval).Should(Succeed())
	return cond
}

// requestSync asks the GitRepository to poll now (what the CLI and the webhook do).
func (f *fixture) requestSync(g Gomega) {
	repo := f.gitRepository(g)
	base := client.MergeFrom(repo.DeepCopy())
	if repo.Annotations == nil {
		repo.Annotations = map[string]string{}
	}
	repo.Annotations[gitsyncv1.RequestedAtAnnotation] = time.Now().Format(time.RFC3339Nano)
	g.Expect(env.Client.Patch(context.Background(), repo, base)).To(Succeed())
}

// suspend stops gitsync from reconciling the fixture's objects (so that the operators of
// later tests leave them alone).
func (f *fixture) suspend() {
	f.t.Helper()
	g := NewWithT(f.t)
	repo := f.gitRepository(g)
	base := client.MergeFrom(repo.DeepCopy())
	repo.Spec.Suspend = true
	g.Expect(env.Client.Patch(context.Background(), repo, base)).To(Succeed())
	app := f.app(g)
	appBase := client.MergeFrom(app.DeepCopy())
	app.Spec.Suspend = true
	g.Expect(env.Client.Patch(context.Background(), app, appBase)).To(Succeed())
}

// managedSelector selects every object that carries the fixture Application's labels.
func (f *fixture) managedSelector() client.MatchingLabels {
	return client.MatchingLabels{gitsyncv1.ApplicationLabel: appName, gitsyncv1.ApplicationNamespaceLabel: f.ns}
}

// checkWorld compares the cluster with d: every ConfigMap and Service of d exists in the
// namespace with Git's values and the owner labels, and no ConfigMap or Service anywhere
// in the cluster carries the labels without being in d. It returns how many objects it
// checked.
func (f *fixture) checkWorld(g Gomega, d desired) int {
	ctx := context.Background()
	cms := &corev1.ConfigMapList{}
	g.Expect(env.Client.List(ctx, cms, f.managedSelector())).To(Succeed())
	gotCMs := map[string]map[string]string{}
	for _, cm := range cms.Items {
		g.Expect(cm.Namespace).To(Equal(f.ns), "ConfigMap %s/%s carries the labels", cm.Namespace, cm.Name)
		gotCMs[cm.Name] = cm.Data
	}
	svcs := &corev1.ServiceList{}
	g.Expect(env.Client.List(ctx, svcs, f.managedSelector())).To(Succeed())
	gotSvcs := map[string]int32{}
	for _, svc := range svcs.Items {
		g.Expect(svc.Namespace).To(Equal(f.ns), "Service %s/%s carries the labels", svc.Namespace, svc.Name)
		g.Expect(svc.Spec.Ports).To(HaveLen(1), "Service %s", svc.Name)
		gotSvcs[svc.Name] = svc.Spec.Ports[0].Port
	}
	g.Expect(diffKeys(gotCMs, d.configMaps)).To(BeEmpty(), "ConfigMaps: extra (+) and missing (-)")
	g.Expect(diffKeys(gotSvcs, d.services)).To(BeEmpty(), "Services: extra (+) and missing (-)")
	for name, data := range d.configMaps {
		g.Expect(gotCMs[name]).To(Equal(data), "ConfigMap %s", name)
	}
	for name, port := range d.services {
		g.Expect(gotSvcs[name]).To(Equal(port), "Service %s", name)
	}
	return len(cms.Items) + len(svcs.Items)
}

// diffKeys lists "+name" for keys only in got and "-name" for keys only in want.
func diffKeys[V any](got, want map[string]V) []string {
	var out []string
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "+"+k)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			out = append(out, "-"+k)
		}
	}
	sort.Strings(out)
	return out
}

// inventoryIDs are the inventory's entries of the Application, sorted.
func inventoryIDs(app *gitsyncv1.Application) []string {
	var ids []string
	if app.Status.Inventory != nil {
		for _, e := range app.Status.Inventory.Entries {
			ids = append(ids, e.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// inventory is the inventory an Application of d in ns must end with, sorted.
func (d desired) inventory(ns string) []string {
	var ids []string
	for name := range d.configMaps {
		ids = append(ids, ns+"_"+name+"__ConfigMap")
	}
	for name := range d.services {
		ids = append(ids, ns+"_"+name+"__Service")
	}
	sort.Strings(ids)
	return ids
}

// live lists the ConfigMaps (name → data) and Services (name → first port) of the
// fixture's namespace, managed or not.
func (f *fixture) live(g Gomega) (map[string]map[string]string, map[string]int32) {
	ctx := context.Background()
	cms := &corev1.ConfigMapList{}
	g.Expect(env.Client.List(ctx, cms, client.InNamespace(f.ns))).To(Succeed())
	gotCMs := map[string]map[string]string{}
	for _, cm := range cms.Items {
		gotCMs[cm.Name] = cm.Data
	}
	svcs := &corev1.ServiceList{}
	g.Expect(env.Client.List(ctx, svcs, client.InNamespace(f.ns))).To(Succeed())
	gotSvcs := map[string]int32{}
	for _, svc := range svcs.Items {
		if len(svc.Spec.Ports) > 0 {
			gotSvcs[svc.Name] = svc.Spec.Ports[0].Port
		}
	}
	return gotCMs, gotSvcs
}
