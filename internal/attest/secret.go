package attest

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the key Secret: the names `cosign generate-key-pair k8s://NS/NAME` writes.
const (
	SecretPrivateKey = "cosign.key"
	SecretPassword   = "cosign.password"
	SecretPublicKey  = "cosign.pub"
)

// KeySecret reads the signing key from a Secret (gitsync run --attestation-key-secret),
// parsing it again only when the Secret changed (decrypting a cosign key costs an
// scrypt).
type KeySecret struct {
	Reader client.Reader
	Secret types.NamespacedName

	mu      sync.Mutex
	version string
	key     *Key
}

// Key returns the signing key the Secret holds now.
func (k *KeySecret) Key(ctx context.Context) (*Key, error) {
	s := &corev1.Secret{}
	if err := k.Reader.Get(ctx, k.Secret, s); err != nil {
		return nil, fmt.Errorf("reading the attestation key Secret %s: %w", k.Secret, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil && k.version == s.ResourceVersion {
		return k.key, nil
	}
	key, err := KeyFromSecret(s)
	if err != nil {
		return nil, err
	}
	k.key, k.version = key, s.ResourceVersion
	return key, nil
}

// KeyFor returns the key that signs app's attestations: the Secret's, for every
// Application (see the Application controller's AttestationKeys).
func (k *KeySecret) KeyFor(ctx context.Context, _ client.Object) (*Key, error) { return k.Key(ctx) }

// KeyFromSecret parses the private key of a key Secret (cosign.key, with
// cosign.password when it is encrypted).
func KeyFromSecret(s *corev1.Secret) (*Key, error) {
	pemBytes, ok := s.Data[SecretPrivateKey]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s has no %q", s.Namespace, s.Name, SecretPrivateKey)
	}
	key, err := ParsePrivateKey(pemBytes, s.Data[SecretPassword])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return key, nil
}

// PublicKeyFromSecret parses the public key of a key Secret (cosign.pub): what `gitsync
// verify` trusts.
func PublicKeyFromSecret(s *corev1.Secret) (*PublicKey, error) {
	pemBytes, ok := s.Data[SecretPublicKey]
	if !ok {
		return nil, fmt.Errorf("secret %s/%s has no %q", s.Namespace, s.Name, SecretPublicKey)
	}
	pub, err := ParsePublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return pub, nil
}
