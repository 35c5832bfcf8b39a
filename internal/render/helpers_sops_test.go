package render

import (
	"context"
	"strings"
	"testing"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

// secretValue is what the tests encrypt; no error or masked output may hold it.
const secretValue = "hunter2-s3cr3t-value"

// ageKeys makes an age key: its recipient and its Secret data.
func ageKeys(t testing.TB) (string, map[string][]byte) {
	t.Helper()
	r, key, err := sopsenc.AgeKey()
	if err != nil {
		t.Fatal(err)
	}
	return r, map[string][]byte{"test.agekey": key}
}

// encrypt encrypts plain (a file called name) for the age recipient.
func encrypt(t testing.TB, name, plain, recipient, regex string) string {
	t.Helper()
	out, err := sopsenc.Encrypt(name, []byte(plain), sopsenc.Options{Age: []string{recipient}, EncryptedRegex: regex})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), secretValue) {
		t.Fatal("the encrypted file holds the secret value")
	}
	return string(out)
}

// withKeys is a cluster whose decryption Secret holds data.
func withKeys(t testing.TB, data map[string][]byte) *Cluster {
	return &Cluster{Keys: func(_ context.Context, name string) (decrypt.KeySource, error) {
		if name != "sops-keys" {
			t.Errorf("decryption Secret %q, want sops-keys", name)
		}
		return decrypt.NewKeys(data)
	}}
}

func decrypting(a *gitsyncv1.Application) {
	a.Spec.Decryption = &gitsyncv1.Decryption{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-keys"}}
}

const secretDoc = `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: ` + secretValue + `
`
