package cli

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Flux's and Argo CD's habits work, and point at gitsync's form; a mistyped verb gets a
// suggestion.
func TestFluxAndArgoHabits(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)

	r := gitsync(t, "reconcile", "source", "git", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.err).To(ContainSubstring("gitsync reconcile source app-repo"))
	g.Expect(r.out).To(ContainSubstring("revision main@sha1:" + f.sha))

	r = gitsync(t, "sync", "app", "web", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.err).To(ContainSubstring("gitsync reconcile app web"))
	g.Expect(r.out).To(ContainSubstring("main@sha1:" + f.sha))

	r = gitsync(t, "reconcile", "source", "oci", "x", "-n", f.ns)
	g.Expect(r.code).NotTo(Equal(0))

	r = gitsync(t, "reconcil", "app", "web")
	g.Expect(r.code).NotTo(Equal(0))
	g.Expect(r.err).To(ContainSubstring("Did you mean this?"))
	g.Expect(r.err).To(ContainSubstring("reconcile"))
}

// get -o wide and -o name, and -o json|yaml without managedFields unless asked.
func TestGetOutputs(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)

	r := gitsync(t, "get", "apps", "-n", f.ns, "-o", "wide")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`NAME\s+READY\s+SYNC\s+HEALTH\s+REVISION\s+AGE\s+SOURCE\s+TARGET\s+MESSAGE`))
	g.Expect(r.out).To(ContainSubstring("GitRepository/app-repo"))
	g.Expect(r.out).To(ContainSubstring("./app"))

	r = gitsync(t, "get", "apps", "-n", f.ns, "-o", "name")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(Equal("application.gitsync.dev/web\n"))

	for _, format := range []string{"json", "yaml"} {
		r = gitsync(t, "get", "app", "web", "-n", f.ns, "-o", format)
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.out).NotTo(ContainSubstring("managedFields"), format)
		r = gitsync(t, "get", "app", "web", "-n", f.ns, "-o", format, "--show-managed-fields")
		g.Expect(r.out).To(ContainSubstring("managedFields"), format)
	}
}

// `wait --for synced` on a drifted Application says what it waited for and what it saw
// last: the drifted object, its field and who wrote it.
func TestWaitSaysWhatItSawLast(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "settings"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) []gitsyncv1.DriftedObject {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
		return f.app.Status.Drift
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(BeEmpty())

	r := gitsync(t, "wait", "app", "web", "-n", f.ns, "--for", "synced", "--timeout", "2s")
	g.Expect(r.code).NotTo(Equal(0))
	g.Expect(r.err).To(ContainSubstring("waiting for Application " + f.ns + "/web to be synced"))
	g.Expect(r.err).To(ContainSubstring("sync OutOfSync"))
	g.Expect(r.err).To(ContainSubstring("drift ConfigMap/" + f.ns + "/settings: /data/greeting by kubectl-edit"))
}

// The tree shows a drifted object as such, and the hooks of the last run.
func TestTreeShowsDriftAndHooks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "settings"}, cm)).To(Succeed())
	base := client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, base, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) string {
		return gitsync(t, "tree", "app", "web", "-n", f.ns).out
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(ContainSubstring("ConfigMap/" + f.ns + "/settings (Healthy, drifted)"))

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), f.app)).To(Succeed())
	base = client.MergeFrom(f.app.DeepCopy())
	f.app.Status.Hooks = []gitsyncv1.HookStatus{{Kind: "Job", Namespace: f.ns, Name: "migrate-x1", Phase: gitsyncv1.HookPreSync, Result: "Succeeded"}}
	g.Expect(env.Client.Status().Patch(ctx, f.app, base)).To(Succeed())
	r := gitsync(t, "tree", "app", "web", "-n", f.ns)
	g.Expect(r.out).To(ContainSubstring("└── Hooks of the last run\n    └── Job/" + f.ns + "/migrate-x1 (PreSync, Healthy)\n"))
}

// Every verb on one object reads the same forms: `suspend|resume source git NAME` (Flux's)
// as `reconcile source git NAME` does.
func TestOneObjectFormForEveryVerb(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	repo := &gitsyncv1.GitRepository{}
	for _, vs := range [][2]string{{"suspend", "suspended"}, {"resume", "resumed"}} {
		verb, state := vs[0], vs[1]
		r := gitsync(t, verb, "source", "git", "app-repo", "-n", f.ns)
		g.Expect(r.code).To(Equal(0), r.String())
		g.Expect(r.err).To(Equal("(gitsync's form: gitsync " + verb + " source app-repo)\n"))
		g.Expect(r.out).To(Equal("GitRepository " + f.ns + "/app-repo " + state + "\n"))
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "app-repo"}, repo)).To(Succeed())
		g.Expect(repo.Spec.Suspend).To(Equal(verb == "suspend"))
	}
	r := gitsync(t, "get", "source", "git", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(MatchRegexp(`(?m)^gitrepository/app-repo\s+True\s`))

	r = gitsync(t, "suspend", "source", "oci", "app-repo", "-n", f.ns)
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(Equal("error: accepts 2 arg(s) (KIND NAME), or Flux's `source git|helm NAME`; received 3\n"))
}
