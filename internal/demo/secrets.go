package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"filippo.io/age"
	"filippo.io/age/armor"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// ageKeySecret holds the demo's age private key, in Namespace: spec.decryption's Secret.
const ageKeySecret = "sops-age"

// configApp is the demo's "Secrets and configuration" app: an age-encrypted Secret and
// a ${CLUSTER_NAME} variable (spec.postBuild), with a key made at demo start — no
// private key is checked in anywhere.
type configApp struct {
	files  map[string]string // for the Git repository
	ageKey []byte            // the *.agekey entry of ageKeySecret
}

// newConfigApp makes a fresh age key and a random password, and encrypts the Secret for
// the key as `sops --encrypt --encrypted-regex '^(data|stringData)$'` would.
func newConfigApp() (*configApp, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 12)
	if _, err := rand.Read(pw); err != nil {
		return nil, err
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\nstringData:\n" +
		"  username: demo\n  password: " + hex.EncodeToString(pw) + "\n"
	enc, err := encryptForAge([]byte(secret), id.Recipient(), "^(data|stringData)$")
	if err != nil {
		return nil, fmt.Errorf("encrypting the demo Secret: %w", err)
	}
	key := []byte("# made by gitsync demo\n" + id.String() + "\n")
	return &configApp{ageKey: key, files: map[string]string{
		"apps/config/db-credentials.yaml": "# encrypted with sops (age) at demo start; gitsync decrypts it with the key in Secret " + ageKeySecret + "\n" + string(enc),
		"apps/config/cluster-info.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-info
data:
  cluster: ${CLUSTER_NAME}          # spec.postBuild.substitute
  region: ${REGION:=local}          # a default
  literal: $${CLUSTER_NAME}         # an escape: stays ${CLUSTER_NAME}
`,
	}}, nil
}

// encryptForAge encrypts plain, a YAML document, as SOPS does for one age recipient: a
// fresh data key, age-armored for the recipient, encrypts the values under the keys
// that encryptedRegex matches (internal/sopsfile's tests check that SOPS reads it).
func encryptForAge(plain []byte, r *age.X25519Recipient, encryptedRegex string) ([]byte, error) {
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	var wrapped bytes.Buffer
	aw := armor.NewWriter(&wrapped)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(dataKey); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	return sopsfile.Encrypt(plain, sopsfile.YAML, sopsfile.Encryption{
		DataKey:        dataKey,
		Keys:           []sopsfile.MasterKey{{Type: sopsfile.KeyAge, ID: r.String(), Encrypted: wrapped.String()}},
		EncryptedRegex: encryptedRegex,
	})
}

// create makes the key's Secret and the Application "config".
func (a *configApp) create(ctx context.Context, c client.Client) error {
	key := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ageKeySecret, Namespace: Namespace},
		Data:       map[string][]byte{"demo.agekey": a.ageKey},
	}
	if err := c.Create(ctx, key); err != nil {
		return fmt.Errorf("creating the decryption Secret: %w", err)
	}
	app := &gitsyncv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: Namespace},
		Spec: gitsyncv1.ApplicationSpec{
			SourceRef:  gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"},
			Path:       "apps/config",
			Prune:      true,
			Decryption: &gitsyncv1.Decryption{Provider: gitsyncv1.DecryptionProviderSOPS, SecretRef: gitsyncv1.LocalObjectReference{Name: ageKeySecret}},
			PostBuild:  &gitsyncv1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "demo-cluster"}},
		},
	}
	if err := c.Create(ctx, app); err != nil {
		return fmt.Errorf("creating the config Application: %w", err)
	}
	return nil
}

// configHints are the demo's printed hints for the config Application.
const configHints = `  # secrets and configuration: an age-encrypted Secret and a ${CLUSTER_NAME} variable
  grep -A3 stringData {repo}/apps/config/db-credentials.yaml     # encrypted in Git (sops, age)
  kubectl get secret db-credentials -n {ns} -o go-template='{{.data.password | base64decode}}{{"\n"}}'   # decrypted in the cluster
  kubectl get configmap cluster-info -n {ns} -o jsonpath='{.data}{"\n"}'     # cluster: demo-cluster
  gitsync diff app config -n {ns}              # the encrypted Secret is left encrypted, not compared, and it says so
  gitsync diff app config -n {ns} --decrypt    # decrypted with your own rights to Secret ` + ageKeySecret + `; values masked
  gitsync build app config -n {ns} --decrypt   # the Secret's values print as ***

`
