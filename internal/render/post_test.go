package render

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluxcd/pkg/ssa/utils"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/substitute"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %d objects", kind, name, len(objs))
	return nil
}

func noSecretIn(t *testing.T, what string, v any) {
	t.Helper()
	var s string
	switch x := v.(type) {
	case error:
		s = x.Error()
	case string:
		s = x
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if strings.Contains(s, secretValue) {
		t.Fatalf("%s holds the secret value: %s", what, s)
	}
}

// One encrypted tree decrypts in every render kind: a SOPS document among plain
// manifests, a kustomize secretGenerator over an encrypted env file and an encrypted
// resource, and a chart's encrypted valuesFile. The plain values are reported as
// sensitive; a preview keeps everything encrypted and says so; offline it is refused.
func TestRenderDecrypts(t *testing.T) {
	r, keys := ageKeys(t)
	root := t.TempDir()
	write(t, root, map[string]string{
		"plain/secret.yaml": encrypt(t, "secret.yaml", secretDoc, r, "^(data|stringData)$"),
		"plain/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {k: v}\n",
		"plain/cm-enc.yaml": encrypt(t, "cm-enc.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: enc}\ndata: {token: "+secretValue+"-cm, short: abc}\n", r, "^data$"),
		"kust/kustomization.yaml": "resources: [secret.yaml]\nsecretGenerator:\n- name: env\n  envs: [app.env]\n" +
			"generatorOptions: {disableNameSuffixHash: true}\n",
		"kust/secret.yaml":         encrypt(t, "secret.yaml", secretDoc, r, "^(data|stringData)$"),
		"kust/app.env":             encrypt(t, "app.env", "TOKEN="+secretValue+"\nMODE=prod\n", r, ""),
		"chart/Chart.yaml":         "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"chart/templates/s.yaml":   "apiVersion: v1\nkind: Secret\nmetadata: {name: from-values}\nstringData: {password: {{ .Values.password | quote }}}\n",
		"chart/secret-values.yaml": encrypt(t, "secret-values.yaml", "password: "+secretValue+"\n", r, ""),
	})
	chartApp := func(a *gitsyncv1.Application) {
		a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFiles: []string{"secret-values.yaml"}}
	}
	cases := []struct {
		path   string
		mutate func(*gitsyncv1.Application)
		check  func(*testing.T, []*unstructured.Unstructured)
	}{
		{"plain", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			if got := find(t, objs, "Secret", "db").Object["stringData"].(map[string]any)["password"]; got != secretValue {
				t.Fatalf("password %v", got)
			}
		}},
		{"kust", nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			find(t, objs, "Secret", "db")
			data := find(t, objs, "Secret", "env").Object["data"].(map[string]any)
			if got, _ := base64.StdEncoding.DecodeString(data["TOKEN"].(string)); string(got) != secretValue || len(data) != 2 {
				t.Fatalf("generated Secret data %v", data)
			}
		}},
		{"chart", chartApp, func(t *testing.T, objs []*unstructured.Unstructured) {
			if got := find(t, objs, "Secret", "from-values").Object["stringData"].(map[string]any)["password"]; got != secretValue {
				t.Fatalf("password %v", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			a := app(decrypting)
			if tc.mutate != nil {
				tc.mutate(a)
			}
			res, err := Render(context.Background(), a, Source{Root: root, Path: tc.path}, withKeys(t, keys))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, res.Objects)
			for _, o := range res.Objects {
				if _, ok := o.Object["sops"]; ok {
					t.Fatalf("%s keeps its sops metadata", utils.FmtUnstructured(o))
				}
			}
			// A Secret's values are masked with its data; other decrypted values
			// (a ConfigMap's, an env file's, a values file's) are reported, but not
			// the short ones.
			want := secretValue
			if tc.path == "plain" {
				want = secretValue + "-cm"
				if contains(res.Sensitive, secretValue) || contains(res.Sensitive, "abc") {
					t.Fatalf("sensitive %q holds a Secret's or a short value", res.Sensitive)
				}
			}
			if !contains(res.Sensitive, want) {
				t.Fatalf("sensitive %q lacks the decrypted value", res.Sensitive)
			}

			_, err = Render(context.Background(), a, Source{Root: root, Path: tc.path}, nil)
			if err == nil || !strings.Contains(err.Error(), "is SOPS-encrypted") || !strings.Contains(err.Error(), "--decrypt") {
				t.Fatalf("offline: %v", err)
			}
			noSecretIn(t, "the offline error", err)

			res, err = Render(context.Background(), a, Source{Root: root, Path: tc.path, KeepEncrypted: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Encrypted) == 0 {
				t.Fatal("a preview names nothing left encrypted")
			}
			noSecretIn(t, "a preview's objects", res.Objects)
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OpenPGP keys decrypt as age keys do.
func TestRenderDecryptsOpenPGP(t *testing.T) {
	e, armored, err := sopsenc.PGPKey("render test")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopsenc.Encrypt("s.yaml", []byte(secretDoc), sopsenc.Options{PGP: []*openpgp.Entity{e}, EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, map[string]string{"s.yaml": string(enc)})
	res, err := Render(context.Background(), app(decrypting), Source{Root: root}, withKeys(t, map[string][]byte{"k.asc": armored}))
	if err != nil {
		t.Fatal(err)
	}
	if got := find(t, res.Objects, "Secret", "db").Object["stringData"].(map[string]any)["password"]; got != secretValue {
		t.Fatalf("password %v", got)
	}
}

// A wrong key, a tampered MAC and a tampered value fail the render naming the file and
// the keys, never the plain value; so does a SOPS document without spec.decryption.
func TestRenderDecryptFailures(t *testing.T) {
	r, keys := ageKeys(t)
	other, _ := ageKeys(t)
	_, wrong := ageKeys(t)
	good := encrypt(t, "s.yaml", secretDoc, r, "^(data|stringData)$")
	tamperedMAC := strings.Replace(good, "mac: ENC[AES256_GCM,data:", "mac: ENC[AES256_GCM,data:AAAA", 1)
	// An unencrypted value changed: only the full MAC check over the file sees it.
	tamperedPlain := strings.Replace(good, "name: db", "name: dc", 1)
	cases := []struct {
		name, file string
		keys       map[string][]byte
		want       []string
		noDecrypt  bool
	}{
		{"wrong key", encrypt(t, "s.yaml", secretDoc, other, ""), wrong, []string{"wrong/s.yaml", other, "keys tried: age:"}, false},
		{"tampered MAC", tamperedMAC, keys, []string{"tampered/s.yaml", "MAC"}, false},
		{"tampered value", tamperedPlain, keys, []string{"tampered/s.yaml", "MAC does not match"}, false},
		{"no spec.decryption", good, keys, []string{"Secret/db is SOPS-encrypted and spec.decryption is not set"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := "wrong"
			if strings.HasPrefix(tc.name, "tampered") {
				dir = "tampered"
			}
			write(t, root, map[string]string{dir + "/s.yaml": tc.file})
			a := app(decrypting)
			if tc.noDecrypt {
				a = app()
			}
			_, err := Render(context.Background(), a, Source{Root: root, Path: dir}, withKeys(t, tc.keys))
			if err == nil {
				t.Fatal("rendered")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			noSecretIn(t, "the error", err)
		})
	}
}

// Substitution follows Flux: defaults, escapes, the disabled annotation, strict
// missing variables; substituteFrom values of a Secret are sensitive; substituteFrom
// needs a cluster, inline values do not.
func TestRenderSubstitutes(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars}\ndata:\n" +
			"  cluster: ${CLUSTER_NAME}\n  region: ${REGION:=eu-west-1}\n  tier: ${TIER:-gold}\n" +
			"  escaped: $${CLUSTER_NAME}\n  token: ${TOKEN}\n",
		"off.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: off\n  annotations: {gitsync.dev/substitute: disabled}\ndata: {v: '${CLUSTER_NAME}'}\n",
	})
	a := app(func(a *gitsyncv1.Application) {
		a.Spec.PostBuild = &gitsyncv1.PostBuild{
			Substitute:     map[string]string{"CLUSTER_NAME": "prod-1"},
			SubstituteFrom: []gitsyncv1.SubstituteReference{{Kind: "Secret", Name: "tokens"}, {Kind: "ConfigMap", Name: "gone", Optional: true}},
		}
	})
	cluster := &Cluster{Variables: func(_ context.Context, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
		if ref.Name == "gone" {
			return nil, nil
		}
		return &substitute.Source{Data: map[string]string{"TOKEN": secretValue}, Secret: true}, nil
	}}
	res, err := Render(context.Background(), a, Source{Root: root}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	data := find(t, res.Objects, "ConfigMap", "vars").Object["data"].(map[string]any)
	want := map[string]any{"cluster": "prod-1", "region": "eu-west-1", "tier": "gold", "escaped": "${CLUSTER_NAME}", "token": secretValue}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("%s = %v, want %v", k, data[k], v)
		}
	}
	if got := find(t, res.Objects, "ConfigMap", "off").Object["data"].(map[string]any)["v"]; got != "${CLUSTER_NAME}" {
		t.Errorf("disabled object substituted: %v", got)
	}
	if !contains(res.Sensitive, secretValue) || contains(res.Sensitive, "prod-1") {
		t.Errorf("sensitive %q", res.Sensitive)
	}

	_, err = Render(context.Background(), a, Source{Root: root}, nil)
	if err == nil || !strings.Contains(err.Error(), "substituteFrom Secret tokens is read from the cluster") {
		t.Fatalf("offline substituteFrom: %v", err)
	}
	strict := app(func(a *gitsyncv1.Application) {
		a.Spec.PostBuild = &gitsyncv1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "prod-1"}}
	})
	_, err = Render(context.Background(), strict, Source{Root: root}, nil)
	if err == nil || !strings.Contains(err.Error(), `"TOKEN" is not set`) {
		t.Fatalf("missing variable: %v", err)
	}
}

// Patches of both kinds apply over a chart's Deployment (Helm post-rendering), images
// over plain YAML, commonMetadata over everything.
func TestRenderTransforms(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"chart/templates/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n" +
			"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
			"    spec: {containers: [{name: web, image: nginx:1.0}]}\n",
		"plain/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n" +
			"  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n" +
			"    spec: {containers: [{name: api, image: ghcr.io/org/api:1.0}]}\n",
	})
	a := app(func(a *gitsyncv1.Application) {
		a.Spec.Patches = []gitsyncv1.Patch{
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: web, env: [{name: MODE, value: prod}]}]}}}\n"},
			{Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 3}]`, Target: &gitsyncv1.PatchSelector{Kind: "Deployment", Name: "web"}},
		}
		a.Spec.Images = []gitsyncv1.Image{{Name: "ghcr.io/org/api", NewTag: "2.0"}}
		a.Spec.CommonMetadata = &gitsyncv1.CommonMetadata{Labels: map[string]string{"team": "a"}}
	})
	res, err := Render(context.Background(), a, Source{Root: root, Path: "chart"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := find(t, res.Objects, "Deployment", "web")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas %d", r)
	}
	c, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if env := c[0].(map[string]any)["env"]; env == nil || c[0].(map[string]any)["image"] != "nginx:1.0" {
		t.Errorf("container %v", c[0])
	}
	if d.GetLabels()["team"] != "a" || d.GetNamespace() != "team" {
		t.Errorf("labels %v, namespace %q", d.GetLabels(), d.GetNamespace())
	}
	a.Spec.Patches = nil // they name the chart's Deployment
	res, err = Render(context.Background(), a, Source{Root: root, Path: "plain"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ = unstructured.NestedSlice(find(t, res.Objects, "Deployment", "api").Object, "spec", "template", "spec", "containers")
	if img := c[0].(map[string]any)["image"]; img != "ghcr.io/org/api:2.0" {
		t.Errorf("image %v", img)
	}
}
