package fault

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

// holeSecretValue is the value the SOPS tenant encrypts: nothing may hold it in the clear
// but the Secret it was encrypted for.
const holeSecretValue = "fault-s3cr3t-5e1f0a"

// holeReasons are the reasons a render refused by the YAML budget or by decryption may
// carry.
var holeReasons = []string{gitsyncv1.BuildFailedReason, gitsyncv1.TooLargeReason, gitsyncv1.RenderLimitExceededReason}

// withSOPSKeys makes an age key, stores it in the Secret "sops-keys" of the Application's
// namespace (before the Application exists) and sets spec.decryption; the recipient to
// encrypt for is written to recipient.
func withSOPSKeys(t *testing.T, recipient *string) func(*gitsyncv1.Application) {
	return func(a *gitsyncv1.Application) {
		r, key, err := sopsenc.AgeKey()
		if err != nil {
			t.Fatal(err)
		}
		*recipient = r
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: a.Namespace},
			Data: map[string][]byte{"identity.agekey": key}}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		a.Spec.Decryption = &gitsyncv1.Decryption{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-keys"}}
	}
}

// holeChart is a chart at the repository's root whose ConfigMap "cm" holds .Values.value,
// with the values file values-prod.yaml.
func holeChart(values string) map[string]string {
	return map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: tenant\nversion: 0.1.0\n",
		"templates/main.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {value: {{ .Values.value | quote }}}\n",
		"values-prod.yaml":    values,
	}
}

// cmValue reads data.value of the ConfigMap cm of ns.
func cmValue(g Gomega, ns string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cm"}, cm)).To(Succeed())
	return cm.Data["value"]
}

// Issue 34, item 2 (YAML alias bombs past the first document; a SOPS document without a
// MAC), against the operator binary: three tenants commit, on top of a good revision, an
// alias bomb in the second document of a plain YAML file, an alias bomb in the second
// document of a chart's values file, and a SOPS Secret whose MAC was deleted and whose
// unencrypted namespace and name were rewritten to plant it in another tenant's namespace.
// Each Application says Ready=False naming the file; nothing of the bad revisions is
// applied and the last good revision's objects stay; the forged Secret exists nowhere;
// another namespace's Application still syncs new revisions; the operator is the same
// process throughout (never restarted).
func TestYAMLAndSOPSHoles(t *testing.T) {
	sharedOperator(t)
	g := NewWithT(t)
	before := sharedState()
	const interval = 2 * time.Second

	good := smallRevision("good", "one", "two", "three")
	other, otherSHA := newFixture(t, smallRevision("other-0", "one").files(), interval)
	plain, plainSHA := newFixture(t, good.files(), interval)
	chart, chartSHA := newFixture(t, holeChart("value: good\n"), interval, func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFiles: []string{"values-prod.yaml"}}
	})
	other.waitApplied(otherSHA, time.Minute)
	// Created once the Application controller runs: one that reads a Secret (here its
	// decryption keys) while the controller starts deadlocks it (refs.go's watch of the
	// Secrets it reads, started from the Application informer's handler, waits for the
	// controller's lock, which its start holds until that handler has synced) — a
	// separate hole, reported rather than dodged silently.
	var recipient string
	sops, sopsSHA := newFixture(t, good.files(), interval, withSOPSKeys(t, &recipient))
	plain.waitApplied(plainSHA, time.Minute)
	chart.waitApplied(chartSHA, time.Minute)
	sops.waitApplied(sopsSHA, time.Minute)

	// The SOPS tenant's good revision: an encrypted Secret of its own.
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: " + sops.ns + "\nstringData:\n  password: " + holeSecretValue + "\n"
	enc, err := sopsenc.Encrypt("secret.yaml", []byte(secret), sopsenc.Options{Age: []string{recipient}, EncryptedRegex: "^(data|stringData)$"})
	g.Expect(err).NotTo(HaveOccurred())
	sopsSHA = sops.repo.Commit("main", "an encrypted Secret", map[string]string{"secret.yaml": string(enc)})
	sops.waitApplied(sopsSHA, time.Minute)
	dbPassword := func(g Gomega) string {
		s := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: sops.ns, Name: "db"}, s)).To(Succeed())
		return string(s.Data["password"])
	}
	g.Expect(dbPassword(g)).To(Equal(holeSecretValue))

	// The attacks.
	plainBad := plain.repo.Commit("main", "a bomb in the second document", map[string]string{
		"configmaps.yaml": badConfigMaps,
		"extra.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n---\n" + aliasBomb(),
	})
	chartBad := chart.repo.Commit("main", "a bomb in the values file's second document",
		holeChart("value: bad\n---\n"+aliasBomb()))
	forged := regexp.MustCompile(`(?m)^\s*mac:.*\n`).ReplaceAllString(string(enc), "")
	g.Expect(forged).NotTo(Equal(string(enc)), "the MAC is deleted")
	forged = strings.NewReplacer("namespace: "+sops.ns, "namespace: "+other.ns, "name: db", "name: planted").Replace(forged)
	sopsBad := sops.repo.Commit("main", "a forged Secret without its MAC", map[string]string{
		"configmaps.yaml": badConfigMaps,
		"secret.yaml":     forged,
	})

	cond := plain.waitNotReady(plainBad, time.Minute, holeReasons...)
	t.Logf("plain YAML: Ready=False %s: %s", cond.Reason, cond.Message)
	g.Expect(cond.Message).To(MatchRegexp(`extra\.yaml: document 2 expands to more than \d+ values`))
	cond = chart.waitNotReady(chartBad, time.Minute, holeReasons...)
	t.Logf("values file: Ready=False %s: %s", cond.Reason, cond.Message)
	g.Expect(cond.Message).To(MatchRegexp(`values-prod\.yaml: document 2 expands to more than \d+ values`))
	cond = sops.waitNotReady(sopsBad, time.Minute, holeReasons...)
	t.Logf("SOPS: Ready=False %s: %s", cond.Reason, cond.Message)
	g.Expect(cond.Message).To(ContainSubstring("secret.yaml"))
	g.Expect(cond.Message).To(ContainSubstring("no MAC"))
	g.Expect(cond.Message).NotTo(ContainSubstring(holeSecretValue))

	// While the attacks are refused, another namespace's new revisions are applied in
	// their usual time.
	for i, rev := range []string{"other-1", "other-2"} {
		sha := other.repo.Commit("main", rev, smallRevision(rev, "one").files())
		begin := time.Now()
		other.waitApplied(sha, 20*time.Second)
		t.Logf("the other tenant's revision %d applied in %v", i+1, time.Since(begin).Round(100*time.Millisecond))
	}

	// Nothing of the bad revisions was applied, over a few more attempts: the last good
	// revision's objects are as they were, and the forged Secret exists nowhere.
	g.Consistently(func(g Gomega) {
		plain.checkWorld(g, good)
		g.Expect(plain.app(g).Status.LastAppliedRevision).To(Equal(revision(plainSHA)))
		g.Expect(cmValue(g, chart.ns)).To(Equal("good"))
		g.Expect(chart.app(g).Status.LastAppliedRevision).To(Equal(revision(chartSHA)))
		sops.checkWorld(g, good)
		g.Expect(dbPassword(g)).To(Equal(holeSecretValue))
		g.Expect(sops.app(g).Status.LastAppliedRevision).To(Equal(revision(sopsSHA)))
		for _, ns := range []string{other.ns, sops.ns} {
			err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "planted"}, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s/planted: %v", ns, err)
		}
	}).WithTimeout(3 * interval).WithPolling(500 * time.Millisecond).Should(Succeed())

	before.expectAlive(g)
}
