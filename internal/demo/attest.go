package demo

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/attest"
)

// attestationKeySecret holds the demo's throwaway key pair (in Namespace), in the form
// `cosign generate-key-pair k8s://NS/NAME` writes: the operator signs each sync's
// attestation with it (--attestation-key-secret), `gitsync verify` trusts its cosign.pub.
const attestationKeySecret = "attestation-key"

// createAttestationKey makes a fresh P-256 key, encrypted with a random password, and
// keeps it in attestationKeySecret (the namespace is made if need be). Nothing of it
// outlives the demo.
func createAttestationKey(ctx context.Context, c client.Client) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	password := []byte(hex.EncodeToString(pw))
	keyPEM, err := attest.EncryptPrivateKey(priv, password)
	if err != nil {
		return err
	}
	key, err := attest.ParsePrivateKey(keyPEM, password)
	if err != nil {
		return err
	}
	pub, err := key.MarshalPublicKey()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: attestationKeySecret, Namespace: Namespace},
		Data: map[string][]byte{attest.SecretPrivateKey: keyPEM, attest.SecretPassword: password, attest.SecretPublicKey: pub}}
	if err := c.Create(ctx, s); err != nil {
		return fmt.Errorf("creating the attestation key Secret: %w", err)
	}
	return nil
}
