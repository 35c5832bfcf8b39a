package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// lookupChart is a chart whose one ConfigMap, <release>-seen, copies the data of the
// object that values apiVersion, kind, namespace (default: the release's) and name
// make it `lookup`.
var lookupChart = map[string]string{
	"lookup/Chart.yaml":  "apiVersion: v2\nname: lookup\nversion: 0.1.0\n",
	"lookup/values.yaml": "apiVersion: v1\nkind: ConfigMap\nnamespace: \"\"\nname: public\n",
	"lookup/templates/seen.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seen
data:
  rendered: "true"
  {{- with lookup .Values.apiVersion .Values.kind (.Values.namespace | default .Release.Namespace) .Values.name }}
  found: "true"
  {{- range $k, $v := .data }}
  {{ $k }}: {{ $v | toString | quote }}
  {{- end }}
  {{- end }}
`,
}

// Helm's lookup answers a 403 with an error (only a 404 is "nothing"): a chart that looks
// up what the Application's service account may not read fails to render, with the API
// server's Forbidden in Ready's message, nothing of it applied and the value nowhere;
// what the account may read is found. Granting the read makes the same chart render,
// which shows that the account's permissions, not the operator's, decided.
func TestApplicationHelmLookupAsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, sha := newAppFixture(t, lookupChart)
	other := env.Namespace(t)
	const secretValue = "s3cret-value-in-the-cluster"
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: f.ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: f.ns}, Data: map[string]string{"value": "visible"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "private", Namespace: f.ns}, StringData: map[string]string{"password": secretValue}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "public", Namespace: other}, Data: map[string]string{"value": "other-" + secretValue}},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	grantConfigMaps(t, f.ns, "deployer")
	withLookup := func(values string) func(*gitsyncv1.Application) {
		return func(a *gitsyncv1.Application) {
			a.Spec.Path = "lookup"
			a.Spec.ServiceAccountName = "deployer"
			a.Spec.Helm = &gitsyncv1.HelmSpec{Values: &runtime.RawExtension{Raw: []byte(values)}}
		}
	}
	f.app("cm", withLookup(`{}`))
	f.app("secret", withLookup(`{"kind":"Secret","name":"private"}`))
	f.app("elsewhere", withLookup(`{"namespace":"`+other+`"}`))

	// A ConfigMap of its namespace, which the account may read, is found.
	app := f.waitApplied("cm", sha)
	g.Expect(app.Status.ServiceAccount).To(Equal("system:serviceaccount:" + f.ns + ":deployer"))
	g.Expect(f.configMap(g, "cm-seen").Data).To(Equal(map[string]string{"rendered": "true", "found": "true", "value": "visible"}))

	// A Secret it may not read, and a ConfigMap of another namespace: Forbidden.
	user := `User "system:serviceaccount:` + f.ns + `:deployer"`
	msg := f.waitNotReady("secret", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(And(ContainSubstring("lookup/templates/seen.yaml"), ContainSubstring(`secrets "private" is forbidden`), ContainSubstring(user)))
	msg = f.waitNotReady("elsewhere", gitsyncv1.BuildFailedReason)
	g.Expect(msg).To(And(ContainSubstring(`configmaps "public" is forbidden`), ContainSubstring(user), ContainSubstring(`in the namespace "`+other+`"`)))
	for _, name := range []string{"secret", "elsewhere"} {
		g.Expect(f.exists(g, &corev1.ConfigMap{}, name+"-seen")).To(BeFalse(), "nothing of a failed render is applied")
		app := f.get(g, name)
		g.Expect(app.Status.Inventory).To(BeNil())
		status, err := json.Marshal(app.Status)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(status)).NotTo(ContainSubstring(secretValue))
		g.Expect(string(status)).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secretValue))))
		for _, e := range eventsFor(g, f.ns, name) {
			g.Expect(e.Note).NotTo(ContainSubstring(secretValue))
			g.Expect(e.Note).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secretValue))))
		}
	}

	// Once the account may read that one Secret, the same chart renders it.
	for _, obj := range []client.Object{
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "read-private", Namespace: f.ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"private"}, Verbs: []string{"get"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-private", Namespace: f.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-private"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: f.ns}},
		},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	f.edit(g, "secret", func(a *gitsyncv1.Application) {
		a.Annotations = map[string]string{gitsyncv1.RequestedAtAnnotation: "granted"}
	})
	f.waitApplied("secret", sha)
	g.Expect(f.configMap(g, "secret-seen").Data).To(HaveKeyWithValue("password", base64.StdEncoding.EncodeToString([]byte(secretValue))))
}
