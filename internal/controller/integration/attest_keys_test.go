package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/attest"
	"github.com/gitsync-dev/gitsync/internal/cli"
)

// attestKeyAnnotation names, on an Application of these tests, the Secret (in its
// namespace) whose key signs its syncs: the suite's one Application controller attests
// only those, so that the other tests' syncs stay as they were.
const attestKeyAnnotation = "test.gitsync.dev/attestation-key"

// attestedInTests is the suite's attest.KeySecret per Application (see attestKeyAnnotation).
type attestedInTests struct{}

func (attestedInTests) KeyFor(ctx context.Context, app client.Object) (*attest.Key, error) {
	name := app.GetAnnotations()[attestKeyAnnotation]
	if name == "" {
		return nil, nil
	}
	keys := &attest.KeySecret{Reader: env.Client, Secret: types.NamespacedName{Namespace: app.GetNamespace(), Name: name}}
	return keys.KeyFor(ctx, app)
}

// newKeySecret makes a P-256 key pair and keeps it in a Secret as `cosign
// generate-key-pair k8s://NS/NAME` does: cosign.key (encrypted), cosign.password,
// cosign.pub. It returns the public key's PEM.
func newKeySecret(t *testing.T, ns, name string) []byte {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	password := []byte("correct horse")
	keyPEM, err := attest.EncryptPrivateKey(priv, password)
	if err != nil {
		t.Fatal(err)
	}
	key, err := attest.ParsePrivateKey(keyPEM, password)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.MarshalPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{attest.SecretPrivateKey: keyPEM, attest.SecretPassword: password, attest.SecretPublicKey: pub}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return pub
}

// cliResult is what one `gitsync` run printed and its exit code.
type cliResult struct {
	out  string
	code int
}

// gitsyncCLI runs `gitsync ARGS...` in process against the suite's API server, as a
// person with the suite's kubeconfig would.
func gitsyncCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	kubeconfig, err := env.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	root := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, nil)
	code := cli.Execute(context.Background(), root, append(args, "--kubeconfig", path))
	return cliResult{out: out.String(), code: code}
}
