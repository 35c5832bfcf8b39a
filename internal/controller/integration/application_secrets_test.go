package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

// The values the tests encrypt or substitute from Secrets: no status, event or
// notification may hold them.
const (
	sopsSecretAge = "age-s3cr3t-7f1c2e"
	sopsSecretPGP = "pgp-s3cr3t-93ab10"
	sopsSecretEnv = "env-s3cr3t-51d0aa"
	substSecret   = "subst-s3cr3t-c0ffee"
)

// sopsKeys makes an age key and an OpenPGP key, stores both private keys in the Secret
// "sops-keys" of ns, and returns the age recipient and the OpenPGP options to encrypt for.
func sopsKeys(t *testing.T, ns string) (string, sopsenc.Options) {
	t.Helper()
	recipient, ageKey, err := sopsenc.AgeKey()
	if err != nil {
		t.Fatal(err)
	}
	e, pgpKey, err := sopsenc.PGPKey("gitsync controller test")
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: ns},
		Data: map[string][]byte{"identity.agekey": ageKey, "private.asc": pgpKey}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return recipient, sopsenc.Options{PGP: []*openpgp.Entity{e}, EncryptedRegex: "^(data|stringData)$"}
}

func sopsEncrypt(t *testing.T, name, plain string, opts sopsenc.Options) string {
	t.Helper()
	out, err := sopsenc.Encrypt(name, []byte(plain), opts)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func secretYAML(name, key, value string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n  " + key + ": " + value + "\n"
}

func withDecryption(a *gitsyncv1.Application) {
	a.Spec.Decryption = &gitsyncv1.Decryption{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-keys"}}
}

func secretData(g Gomega, ns, name, key string) string {
	s := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
	return string(s.Data[key])
}

// expectNowhere fails when any value is in the Application's status, the events of
// its namespace or a notification body.
func expectNowhere(g Gomega, ns, app string, bodies func() string, values ...string) {
	a := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: app}, a)).To(Succeed())
	status, _ := json.Marshal(a.Status)
	events := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	evs, _ := json.Marshal(events.Items)
	for _, v := range values {
		g.Expect(string(status)).NotTo(ContainSubstring(v), "status")
		g.Expect(string(evs)).NotTo(ContainSubstring(v), "events")
		if bodies != nil {
			g.Expect(bodies()).NotTo(ContainSubstring(v), "notifications")
		}
	}
}

// Age and OpenPGP documents, and a secretGenerator over an encrypted env file, are
// decrypted by a real sync and applied; no status, event or notification holds a value.
func TestApplicationSecretsDecrypt(t *testing.T) {
	g := NewWithT(t)
	f := newNotifyFixture(t)
	f.provider("hook", "generic", "/hook", nil)
	f.alert("all", "hook")
	recipient, pgp := sopsKeys(t, f.ns)
	age := sopsenc.Options{Age: []string{recipient}, EncryptedRegex: "^(data|stringData)$"}
	sha := f.start(map[string]string{
		"plain/age.yaml": sopsEncrypt(t, "age.yaml", secretYAML("by-age", "password", sopsSecretAge), age),
		"plain/pgp.yaml": sopsEncrypt(t, "pgp.yaml", secretYAML("by-pgp", "password", sopsSecretPGP), pgp),
		"plain/cm.yaml":  configMapYAML("plain", "v"),
		"gen/kustomization.yaml": "secretGenerator:\n- name: generated\n  envs: [app.env]\n" +
			"generatorOptions: {disableNameSuffixHash: true}\n",
		"gen/app.env": sopsEncrypt(t, "app.env", "TOKEN="+sopsSecretEnv+"\n", sopsenc.Options{Age: []string{recipient}}),
	})
	f.app("plain", withDecryption, func(a *gitsyncv1.Application) { a.Spec.Path = "plain" })
	f.app("gen", withDecryption, func(a *gitsyncv1.Application) { a.Spec.Path = "gen" })
	f.waitApplied("plain", sha)
	f.waitApplied("gen", sha)
	g.Expect(secretData(g, f.ns, "by-age", "password")).To(Equal(sopsSecretAge))
	g.Expect(secretData(g, f.ns, "by-pgp", "password")).To(Equal(sopsSecretPGP))
	g.Expect(secretData(g, f.ns, "generated", "TOKEN")).To(Equal(sopsSecretEnv))
	f.waitRequest("/hook", "plain")
	for _, app := range []string{"plain", "gen"} {
		expectNowhere(g, f.ns, app, f.bodies, sopsSecretAge, sopsSecretPGP, sopsSecretEnv)
	}
}

// A wrong key, then a tampered MAC, fail the revision: nothing of it is applied, the
// message names the file (and the keys), never the value; a good commit then applies.
func TestApplicationSecretsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	recipient, _ := sopsKeys(t, ns)
	stranger, _, err := sopsenc.AgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	wrong := sopsenc.Options{Age: []string{stranger}, EncryptedRegex: "^(data|stringData)$"}
	f, _ := newAppFixtureIn(t, ns, map[string]string{
		"db.yaml": sopsEncrypt(t, "db.yaml", secretYAML("db", "password", sopsSecretAge), wrong),
		"cm.yaml": configMapYAML("beside", "v"),
	})
	f.app("app", withDecryption)
	msg := f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("db.yaml"))
	g.Expect(msg).To(ContainSubstring(stranger), "the document's key")
	g.Expect(msg).To(ContainSubstring("age:"+recipient), "the keys tried")
	g.Expect(msg).NotTo(ContainSubstring(sopsSecretAge))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "beside")).To(BeFalse())

	good := sopsEncrypt(t, "db.yaml", secretYAML("db", "password", sopsSecretAge), sopsenc.Options{Age: []string{recipient}, EncryptedRegex: "^(data|stringData)$"})
	f.repo.Commit("main", "tampered", map[string]string{
		"db.yaml": strings.Replace(good, "name: db", "name: dc", 1), // not encrypted, but under the MAC
		"cm.yaml": configMapYAML("beside", "v"),
	})
	g.Eventually(func() string { return f.waitNotReady("app", gitsyncv1.BuildFailedReason) }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(ContainSubstring("MAC does not match"))
	msg = f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring("db.yaml"))
	g.Expect(msg).NotTo(ContainSubstring(sopsSecretAge))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "beside")).To(BeFalse())
	g.Expect(f.exists(g, &corev1.Secret{}, "dc")).To(BeFalse())
	expectNowhere(g, ns, "app", nil, sopsSecretAge)

	sha := f.repo.Commit("main", "fixed", map[string]string{"db.yaml": good, "cm.yaml": configMapYAML("beside", "v")})
	f.waitApplied("app", sha)
	g.Expect(secretData(g, ns, "db", "password")).To(Equal(sopsSecretAge))
}

// A chart's encrypted valuesFile is decrypted; patches of both kinds post-render the
// chart's Deployment; images rewrite a plain YAML app; commonMetadata labels both.
func TestApplicationSecretsChartPatchesImages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	recipient, _ := sopsKeys(t, ns)
	files := chartFiles(t, "chart")
	files["chart/env/secret.yaml"] = sopsEncrypt(t, "secret.yaml", "greeting: "+sopsSecretAge+"\n", sopsenc.Options{Age: []string{recipient}})
	files["plain/deploy.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n" +
		"  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n" +
		"    spec: {containers: [{name: api, image: ghcr.io/org/api:1.0}]}\n"
	f, sha := newAppFixtureIn(t, ns, files)
	f.app("shop", withDecryption, func(a *gitsyncv1.Application) {
		a.Spec.Path = "chart"
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFiles: []string{"env/secret.yaml"}}
		a.Spec.Patches = []gitsyncv1.Patch{
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop-shop}\n" +
				"spec: {template: {spec: {containers: [{name: shop, env: [{name: MODE, value: patched}]}]}}}\n"},
			{Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 4}]`,
				Target: &gitsyncv1.PatchSelector{Group: "apps", Kind: "Deployment", Name: "shop-.*"}},
		}
		a.Spec.CommonMetadata = &gitsyncv1.CommonMetadata{Labels: map[string]string{"team": "shop"}}
	})
	f.app("api", func(a *gitsyncv1.Application) {
		a.Spec.Path = "plain"
		a.Spec.Images = []gitsyncv1.Image{{Name: "ghcr.io/org/api", NewName: "registry.example.com/api", NewTag: "2.0"}}
	})
	f.waitApplied("shop", sha)
	f.waitApplied("api", sha)
	g.Expect(f.configMap(g, "shop-shop").Data).To(HaveKeyWithValue("greeting", sopsSecretAge), "the encrypted valuesFile")
	deploy := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop-shop"}, deploy)).To(Succeed())
	g.Expect(*deploy.Spec.Replicas).To(Equal(int32(4)), "JSON 6902 patch")
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "MODE", Value: "patched"}), "strategic-merge patch")
	g.Expect(deploy.Labels).To(HaveKeyWithValue("team", "shop"))
	g.Expect(deploy.Spec.Template.Labels).NotTo(HaveKey("team"), "commonMetadata stays out of templates")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, deploy)).To(Succeed())
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/api:2.0"))
	expectNowhere(g, ns, "shop", nil, sopsSecretAge)
}

// Substitution through a real sync: inline variables, defaults, escapes, the disabled
// annotation, a Secret's variables (kept out of status and events); a change of that
// Secret re-syncs with no new commit; a missing variable fails naming it.
func TestApplicationSecretsSubstitute(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns}, StringData: map[string]string{"TOKEN": substSecret}}
	g.Expect(env.Client.Create(ctx, sec)).To(Succeed())
	f, sha := newAppFixtureIn(t, ns, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata:\n" +
			"  cluster: ${CLUSTER_NAME}\n  region: ${REGION:=eu-west-1}\n  tier: ${TIER:-gold}\n  escaped: $${CLUSTER_NAME}\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: '${TOKEN}'}\n",
		"off.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: off\n  annotations: {gitsync.dev/substitute: disabled}\ndata: {v: '${CLUSTER_NAME}'}\n",
	})
	f.app("app", func(a *gitsyncv1.Application) {
		a.Spec.PostBuild = &gitsyncv1.PostBuild{
			Substitute:     map[string]string{"CLUSTER_NAME": "prod-1"},
			SubstituteFrom: []gitsyncv1.SubstituteReference{{Kind: "Secret", Name: "vars"}, {Kind: "ConfigMap", Name: "absent", Optional: true}},
		}
	})
	f.waitApplied("app", sha)
	g.Expect(f.configMap(g, "vars").Data).To(Equal(map[string]string{
		"cluster": "prod-1", "region": "eu-west-1", "tier": "gold", "escaped": "${CLUSTER_NAME}"}))
	g.Expect(f.configMap(g, "off").Data).To(HaveKeyWithValue("v", "${CLUSTER_NAME}"))
	g.Expect(secretData(g, ns, "token", "token")).To(Equal(substSecret))
	expectNowhere(g, ns, "app", nil, substSecret)

	// The Secret changes: the Application re-syncs at the same commit.
	sec.StringData = map[string]string{"TOKEN": substSecret + "-2"}
	g.Expect(env.Client.Update(ctx, sec)).To(Succeed())
	g.Eventually(func(g Gomega) string { return secretData(g, ns, "token", "token") }).
		WithTimeout(waitTimeout).WithPolling(pollInterval).Should(Equal(substSecret + "-2"))
	expectNowhere(g, ns, "app", nil, substSecret)

	f.repo.Commit("main", "missing", map[string]string{"more.yaml": configMapYAML("more", "${UNSET_VARIABLE}")})
	msg := f.waitNotReady("app", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(ContainSubstring(`"UNSET_VARIABLE" is not set`))
	g.Expect(f.exists(g, &corev1.ConfigMap{}, "more")).To(BeFalse())
}
