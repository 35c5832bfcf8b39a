package cli

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

const (
	decryptedValue   = "sops-s3cr3t-4e1b77"
	substitutedValue = "token-s3cr3t-9a0d2c"
)

// secretsFiles are an app with an age-encrypted Secret and a ConfigMap with variables:
// ${CLUSTER_NAME} inline, ${TOKEN} from a Secret; extra is one more data line.
func secretsFiles(t *testing.T, recipient, extra string) map[string]string {
	t.Helper()
	enc, err := sopsenc.Encrypt("db.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+decryptedValue+"\n"),
		sopsenc.Options{Age: []string{recipient}, EncryptedRegex: "^(data|stringData)$"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"app/db.yaml": string(enc),
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  cluster: ${CLUSTER_NAME}\n  token: ${TOKEN}\n" + extra,
	}
}

// gitsync diff, gitsync build and the UI's diff of an Application with an encrypted
// Secret and variables from a Secret: without --decrypt the document stays encrypted
// and the output says so; with it the Secret is compared; no output ever holds the
// decrypted value or the Secret's variable, except build --decrypt --show-secrets.
func TestSecretsMaskedInDiffBuildAndUI(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	recipient, key, err := sopsenc.AgeKey()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: ns},
		Data: map[string][]byte{"k.agekey": key}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns},
		StringData: map[string]string{"TOKEN": substitutedValue}})).To(Succeed())
	f := &fixture{ns: ns, srv: gittest.NewServer(t, gittest.Options{})}
	f.repo = f.srv.CreateRepo("app")
	f.sha = f.repo.Commit("main", "first", secretsFiles(t, recipient, ""))
	g.Expect(env.Client.Create(ctx, &gitsyncv1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app-repo", Namespace: ns},
		Spec:       gitsyncv1.GitRepositorySpec{URL: f.srv.HTTPURL("app"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"}},
	})).To(Succeed())
	f.app = &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef:  gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app-repo"},
			Path:       "./app",
			Decryption: &gitsyncv1.Decryption{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-keys"}},
			PostBuild: &gitsyncv1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "demo-cluster"},
				SubstituteFrom: []gitsyncv1.SubstituteReference{{Kind: "Secret", Name: "vars"}}},
		},
	}
	g.Expect(env.Client.Create(ctx, f.app)).To(Succeed())
	f.waitApplied(t, f.sha)
	applied := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, applied)).To(Succeed())
	g.Expect(string(applied.Data["password"])).To(Equal(decryptedValue))

	noValues := func(r result) {
		t.Helper()
		for _, v := range []string{decryptedValue, substitutedValue} {
			g.Expect(r.out+r.err).NotTo(ContainSubstring(v), r.String())
		}
	}

	r := gitsync(t, "diff", "app", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("encrypted  Secret/" + ns + "/db (SOPS-encrypted, not compared: --decrypt)"))
	// One encrypted file, one Secret made of it: counted once.
	g.Expect(r.out).To(ContainSubstring("(1 SOPS-encrypted file or document left encrypted and not compared: app/db.yaml;"))
	noValues(r)

	r = gitsync(t, "diff", "app", "web", "-n", ns, "--decrypt")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("no changes (2 unchanged)"))
	noValues(r)

	// A change next to the Secret's variable: the diff shows the ConfigMap, masked.
	r = gitsync(t, "diff", "app", "web", "-n", ns, "--decrypt", "--path", localCopy(t, secretsFiles(t, recipient, "  more: yes\n")))
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.out).To(ContainSubstring("configured ConfigMap/" + ns + "/vars"))
	g.Expect(r.out).To(ContainSubstring("token: ***"))
	noValues(r)

	r = gitsync(t, "build", "app", "web", "-n", ns)
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("ENC[AES256_GCM,"))
	g.Expect(r.err).To(ContainSubstring("# 1 SOPS-encrypted file or document left encrypted (--decrypt decrypts them): app/db.yaml\n"))
	noValues(r)
	r = gitsync(t, "build", "app", "web", "-n", ns, "--decrypt")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).NotTo(ContainSubstring("ENC[AES256_GCM,"))
	noValues(r)
	r = gitsync(t, "build", "app", "web", "-n", ns, "--decrypt", "--show-secrets")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring(decryptedValue), "--decrypt --show-secrets prints what the sync applies")

	diffs, err := operations.ObjectDiffsFromSource(ctx, env.Config, env.Client, f.app, func(string) bool { return true })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(1), "the encrypted Secret is not compared")
	body, _ := json.Marshal(diffs)
	for _, v := range []string{decryptedValue, substitutedValue} {
		g.Expect(string(body)).NotTo(ContainSubstring(v))
	}
}
