package render

import (
	"context"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// A preview names each SOPS-encrypted file it left encrypted once: the objects made of
// it (its document, a Secret generated from it, a chart's Secret from its values) are
// that file, not one more thing; a Secret whose ciphertext is in no such file is named.
func TestPreviewNamesEachEncryptedFileOnce(t *testing.T) {
	r, _ := ageKeys(t)
	root := t.TempDir()
	write(t, root, map[string]string{
		"plain/secret.yaml": encrypt(t, "secret.yaml", secretDoc, r, "^(data|stringData)$"),
		"plain/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {k: v}\n",
		"kust/kustomization.yaml": "resources: [secret.yaml]\nsecretGenerator:\n- name: env\n  envs: [app.env]\n" +
			"generatorOptions: {disableNameSuffixHash: true}\n",
		"kust/secret.yaml":         encrypt(t, "secret.yaml", secretDoc, r, "^(data|stringData)$"),
		"kust/app.env":             encrypt(t, "app.env", "TOKEN="+secretValue+"\nMODE=prod\n", r, ""),
		"chart/Chart.yaml":         "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"chart/templates/s.yaml":   "apiVersion: v1\nkind: Secret\nmetadata: {name: from-values}\nstringData: {password: {{ .Values.password | quote }}}\n",
		"chart/secret-values.yaml": encrypt(t, "secret-values.yaml", "password: "+secretValue+"\n", r, ""),
		// Ciphertext in a Secret's data (base64), in no SOPS file: the Secret is named.
		"pasted/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: pasted}\ndata: {password: " +
			base64.StdEncoding.EncodeToString([]byte("ENC[AES256_GCM,data:abc=,iv:x,tag:y,type:str]")) + "}\n",
	})
	for path, want := range map[string][]string{
		"plain":  {"plain/secret.yaml"},
		"kust":   {"kust/app.env", "kust/secret.yaml"},
		"chart":  {"secret-values.yaml"},
		"pasted": {"Secret/pasted"},
	} {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			a := app(decrypting)
			if path == "chart" {
				a.Spec.Helm = &gitsyncv1.HelmSpec{ValuesFiles: []string{"secret-values.yaml"}}
			}
			res, err := Render(context.Background(), a, Source{Root: root, Path: path, KeepEncrypted: true}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Encrypted).To(Equal(want))
		})
	}
}
