package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// editAs changes an object with a merge patch made by another field manager, as
// `kubectl edit` or another controller would.
func editAs(g Gomega, manager string, obj client.Object, change func()) {
	base := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	change()
	g.Expect(env.Client.Patch(context.Background(), obj, base, client.FieldOwner(manager))).To(Succeed())
}

// driftEvents returns "Reason: note" of the Application's drift events.
func (f *appFixture) driftEvents(g Gomega, name string) []string {
	var out []string
	for _, e := range eventsFor(g, f.ns, name) {
		if strings.HasPrefix(e.Reason, "Drift") {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

func TestDriftCorrectedAndReported(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"deploy.yaml": deploymentYAML})
	f.app("app")
	f.waitApplied("app", sha)

	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, deploy)).To(Succeed())
	editAs(g, "kubectl-edit", deploy, func() { deploy.Spec.Template.Spec.Containers[0].Image = "nginx:drifted" })

	g.Eventually(func(g Gomega) string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		return deploy.Spec.Template.Spec.Containers[0].Image
	}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("nginx:1.27"))

	subject := "Deployment/" + f.ns + "/web"
	g.Eventually(func(g Gomega) []string { return f.driftEvents(g, "app") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElements(
		And(HavePrefix("DriftDetected: "+subject), ContainSubstring("image"), ContainSubstring("kubectl-edit")),
		And(HavePrefix("DriftCorrected: "+subject), ContainSubstring("image")),
	))
	// Corrected: the report is empty again and the Application Synced.
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Drift).To(BeEmpty())
		g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusSynced))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
}

func TestDriftReportOnly(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("cfg", "from-git")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	f.waitApplied("app", sha)

	cm := f.configMap(g, "cfg")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "by-hand" })
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Drift).To(HaveLen(1))
		d := app.Status.Drift[0]
		g.Expect(d.Object).To(Equal("ConfigMap/" + f.ns + "/cfg"))
		g.Expect(d.Fields).To(ConsistOf(ContainSubstring("/data/value")))
		g.Expect(d.Managers).To(ConsistOf("kubectl-edit"))
		g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusOutOfSync))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	// Reported, not corrected; and the value is never in the report.
	g.Consistently(func(g Gomega) string { return f.configMap(g, "cfg").Data["value"] }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("by-hand"))
	g.Expect(f.driftEvents(g, "app")).NotTo(ContainElement(ContainSubstring("by-hand")))
}

func TestDriftDeletedAndUnlabelledObjectsRestored(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{
		"a.yaml": configMapYAML("deleted", "1"),
		"b.yaml": configMapYAML("unlabelled", "1"),
	})
	f.app("app")
	f.waitApplied("app", sha)

	deleted := f.configMap(g, "deleted")
	uid := deleted.UID
	g.Expect(env.Client.Delete(context.Background(), deleted)).To(Succeed())
	g.Eventually(func(g Gomega) bool {
		cm := &corev1.ConfigMap{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "deleted"}, cm)
		return err == nil && cm.UID != uid
	}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(BeTrue())

	unlabelled := f.configMap(g, "unlabelled")
	editAs(g, "kubectl-label", unlabelled, func() {
		delete(unlabelled.Labels, gitsyncv1.ApplicationLabel)
		delete(unlabelled.Labels, gitsyncv1.ApplicationNamespaceLabel)
	})
	g.Eventually(func(g Gomega) map[string]string { return f.configMap(g, "unlabelled").Labels }).
		WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).
		Should(HaveKeyWithValue(gitsyncv1.ApplicationLabel, "app"))
}

func TestDriftIgnoresFieldsGitDoesNotSet(t *testing.T) {
	g := NewWithT(t)
	// Git sets no replicas: an autoscaler (another manager) may own them.
	noReplicas := strings.Replace(deploymentYAML, "  replicas: 1\n", "", 1)
	f, sha := newAppFixture(t, map[string]string{
		"deploy.yaml": noReplicas,
		"cm.yaml":     configMapYAML("ignored", "from-git"),
	})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.IgnoreDifferences = []gitsyncv1.IgnoreDifference{{Kind: "ConfigMap", Name: "ignored", JSONPointers: []string{"/data/value"}}}
	})
	f.waitApplied("app", sha)

	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, deploy)).To(Succeed())
	editAs(g, "horizontal-pod-autoscaler", deploy, func() { deploy.Spec.Replicas = ptr.To[int32](5) })
	cm := f.configMap(g, "ignored")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "by-hand" })

	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(*deploy.Spec.Replicas).To(Equal(int32(5)))
		g.Expect(f.configMap(g, "ignored").Data["value"]).To(Equal("by-hand"))
		g.Expect(f.get(g, "app").Status.Drift).To(BeEmpty())
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(f.driftEvents(g, "app")).To(BeEmpty())
}

func TestDriftFightBacksOff(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("contested", "from-git")})
	f.app("app")
	f.waitApplied("app", sha)

	// A controller that writes its value back whenever it sees gitsync's, for 4 seconds.
	writes := 0
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		cm := f.configMap(g, "contested")
		if cm.Data["value"] != "theirs" {
			editAs(g, "other-controller", cm, func() { cm.Data["value"] = "theirs" })
			writes++
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Without backoff gitsync would revert every write (about 200 in 4s at this pace);
	// with it, the first three are reverted at once and later ones at 1s, 2s, ...
	g.Expect(writes).To(BeNumerically("<", 15), "the fighter had to write %d times", writes)
	g.Expect(writes).To(BeNumerically(">=", 3))
	g.Eventually(func(g Gomega) []string { return f.driftEvents(g, "app") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(ContainElement(And(HavePrefix("DriftFight: "), ContainSubstring("other-controller"))))
}

// setImageAs writes the web container's image with an Update by field manager (as
// `kubectl set image` does), retrying when gitsync's revert raced it.
func setImageAs(g Gomega, manager string, key client.ObjectKey, image string) {
	g.Eventually(func() error {
		deploy := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), key, deploy); err != nil {
			return err
		}
		deploy.Spec.Template.Spec.Containers[0].Image = image
		return env.Client.Update(context.Background(), deploy, client.FieldOwner(manager))
	}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
}

func imageOf(g Gomega, key client.ObjectKey) string {
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(context.Background(), key, deploy)).To(Succeed())
	return deploy.Spec.Template.Spec.Containers[0].Image
}

// docs/guides/drift.md: twenty `kubectl set image` edits of one field, a second apart,
// are twenty reverts, none delayed; a writer that puts one value back again and again is
// a fight and backs off.
func TestDriftNewEditsRevertedSameValueBacksOff(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"deploy.yaml": deploymentYAML})
	f.app("app")
	f.waitApplied("app", sha)
	key := client.ObjectKey{Namespace: f.ns, Name: "web"}
	fightKey := f.ns + "/app/Deployment/" + f.ns + "/web" // the drift reconciler's key of the object

	// A person: an edit, the revert seen, a second, the next edit (more than 10 within
	// 10 s would be a hot loop, whatever the values).
	for i := range 20 {
		setImageAs(g, "kubectl-set", key, fmt.Sprintf("nginx:edit-%d", i))
		g.Eventually(func(g Gomega) string { return imageOf(g, key) }).
			WithTimeout(10*time.Second).WithPolling(10*time.Millisecond).Should(Equal("nginx:1.27"), "edit %d", i)
		// Reverted without holding the next correction back.
		g.Expect(driftReconciler.BackoffLeft(fightKey, time.Now())).To(BeZero(), "edit %d", i)
		time.Sleep(time.Second)
	}
	g.Expect(f.driftEvents(g, "app")).NotTo(ContainElement(HavePrefix("DriftFight: ")))

	// A controller that writes one value back whenever it sees gitsync's, for 3 seconds.
	writes := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if imageOf(g, key) != "nginx:stuck" {
			setImageAs(g, "kubectl-set", key, "nginx:stuck")
			writes++
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Expect(writes).To(BeNumerically("<", 15), "the fighter had to write %d times", writes)
	g.Eventually(func(g Gomega) []string { return f.driftEvents(g, "app") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).
		Should(ContainElement(And(HavePrefix("DriftFight: "), ContainSubstring("kubectl-set"), ContainSubstring("the same value"))))
	g.Expect(f.driftEvents(g, "app")).NotTo(ContainElement(ContainSubstring("nginx:stuck")))
}

// A Secret written in Git with stringData: the API server stores it as data, so a
// `kubectl edit` of its data is drift like any other, reported by path only.
func TestDriftSecretWrittenWithStringData(t *testing.T) {
	g := NewWithT(t)
	const fromGit, byHand = "s3cr3t-from-git", "h4nd-edited-value"
	f, sha := newAppFixture(t, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n" +
		"stringData:\n  password: " + fromGit + "\n  username: app\n"})
	f.app("healed")
	f.app("reported", func(a *gitsyncv1.Application) {
		a.Spec.SelfHeal = ptr.To(false)
		a.Spec.TargetNamespace = env.Namespace(t)
	})
	f.waitApplied("healed", sha)
	reported := f.waitApplied("reported", sha)
	secrets := map[string]client.ObjectKey{
		"healed":   {Namespace: f.ns, Name: "db"},
		"reported": {Namespace: reported.Spec.TargetNamespace, Name: "db"},
	}
	password := func(g Gomega, key client.ObjectKey) string {
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), key, s)).To(Succeed())
		return string(s.Data["password"])
	}
	for _, key := range secrets {
		g.Expect(password(g, key)).To(Equal(fromGit))
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), key, s)).To(Succeed())
		editAs(g, "kubectl-edit", s, func() { s.Data["password"] = []byte(byHand) })
	}

	// selfHeal: reverted.
	g.Eventually(func(g Gomega) string { return password(g, secrets["healed"]) }).
		WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal(fromGit))
	subject := "Secret/" + f.ns + "/db"
	g.Eventually(func(g Gomega) []string { return f.driftEvents(g, "healed") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainElements(
		And(HavePrefix("DriftDetected: "+subject), ContainSubstring("/data/password"), ContainSubstring("kubectl-edit")),
		And(HavePrefix("DriftCorrected: "+subject), ContainSubstring("/data/password")),
	))

	// Report only: status.drift names the field and the writer.
	g.Eventually(func(g Gomega) {
		app := f.get(g, "reported")
		g.Expect(app.Status.Drift).To(HaveLen(1))
		g.Expect(app.Status.Drift[0].Fields).To(Equal([]string{"/data/password"}))
		g.Expect(app.Status.Drift[0].Managers).To(ConsistOf("kubectl-edit"))
	}).WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Succeed())
	g.Expect(password(g, secrets["reported"])).To(Equal(byHand))

	// Never a value, plain or base64, in status or events.
	values := []string{fromGit, byHand, base64.StdEncoding.EncodeToString([]byte(fromGit)), base64.StdEncoding.EncodeToString([]byte(byHand))}
	for _, name := range []string{"healed", "reported"} {
		app := f.get(g, name)
		status, err := json.Marshal(app.Status)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range eventsFor(g, f.ns, name) {
			status = append(status, e.Note...)
		}
		for _, v := range values {
			g.Expect(string(status)).NotTo(ContainSubstring(v))
		}
	}
}

func TestDriftWatchStopsWhenKindLeavesInventories(t *testing.T) {
	g := NewWithT(t)
	limitRange := schema.GroupVersionKind{Version: "v1", Kind: "LimitRange"}
	f, sha := newAppFixture(t, map[string]string{
		"cm.yaml": configMapYAML("stays", "1"),
		"lr.yaml": "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: limits\nspec:\n  limits:\n    - type: Container\n      default: {cpu: 100m}\n",
	})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.Prune = true })
	f.waitApplied("app", sha)
	g.Expect(driftReconciler.Watches.Kinds()).To(ContainElement(limitRange))

	sha2 := f.repo.Commit("main", "drop the LimitRange", nil, "lr.yaml")
	f.waitApplied("app", sha2)
	g.Eventually(driftReconciler.Watches.Kinds).WithTimeout(waitTimeout).WithPolling(pollInterval).
		ShouldNot(ContainElement(limitRange))
}

// A person who undoes an edit within the same second (managedFields record times to the
// second, so their entry looks unchanged) still clears the drift report.
func TestDriftReportClearedWhenTheWriterUndoesItsEdit(t *testing.T) {
	g := NewWithT(t)
	f, sha := newAppFixture(t, map[string]string{"cm.yaml": configMapYAML("cfg", "from-git")})
	f.app("app", func(a *gitsyncv1.Application) { a.Spec.SelfHeal = ptr.To(false) })
	f.waitApplied("app", sha)

	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // the start of a second
	cm := f.configMap(g, "cfg")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "by-hand" })
	g.Eventually(func(g Gomega) []gitsyncv1.DriftedObject { return f.get(g, "app").Status.Drift }).
		WithTimeout(waitTimeout).WithPolling(20 * time.Millisecond).Should(HaveLen(1))
	cm = f.configMap(g, "cfg")
	editAs(g, "kubectl-edit", cm, func() { cm.Data["value"] = "from-git" })
	g.Eventually(func(g Gomega) {
		app := f.get(g, "app")
		g.Expect(app.Status.Drift).To(BeEmpty())
		g.Expect(app.Status.Sync.Status).To(Equal(gitsyncv1.SyncStatusSynced))
	}).WithTimeout(5 * time.Second).WithPolling(pollInterval).Should(Succeed())
}
