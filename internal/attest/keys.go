package attest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
)

// PEM block types of cosign's key files: `cosign generate-key-pair` writes the private
// key encrypted (scrypt + NaCl secretbox, go-securesystemslib's encrypted format) as
// "ENCRYPTED SIGSTORE PRIVATE KEY" (older releases: "ENCRYPTED COSIGN PRIVATE KEY"), and
// the public key as a PKIX "PUBLIC KEY".
const (
	sigstorePrivateKey  = "ENCRYPTED SIGSTORE PRIVATE KEY"
	cosignPrivateKey    = "ENCRYPTED COSIGN PRIVATE KEY"
	pkcs8PrivateKey     = "PRIVATE KEY"
	ecPrivateKey        = "EC PRIVATE KEY"
	publicKeyBlock      = "PUBLIC KEY"
	maxKeyFile          = 64 << 10
	maxEncryptedKeySize = 16 << 10
)

// Key is a signing key: ECDSA (P-256, as cosign makes) or Ed25519. It signs DSSE
// envelopes (dsse.Signer) and verifies them (dsse.Verifier).
type Key struct {
	signer crypto.Signer
	*PublicKey
}

// PublicKey verifies envelopes signed by its private key.
type PublicKey struct {
	public crypto.PublicKey
	keyID  string
}

// ParsePrivateKey reads a PEM private key: cosign's encrypted format (with password)
// or a plain PKCS#8 (or SEC 1 EC) key (password unused).
func ParsePrivateKey(pemBytes, password []byte) (*Key, error) {
	if len(pemBytes) > maxKeyFile {
		return nil, fmt.Errorf("reading the private key: larger than %d bytes", maxKeyFile)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("reading the private key: no PEM block")
	}
	der := block.Bytes
	switch block.Type {
	case sigstorePrivateKey, cosignPrivateKey:
		if len(der) > maxEncryptedKeySize {
			return nil, fmt.Errorf("reading the private key: encrypted key larger than %d bytes", maxEncryptedKeySize)
		}
		plain, err := encrypted.Decrypt(der, password)
		if err != nil {
			return nil, fmt.Errorf("decrypting the private key (wrong password?): %w", err)
		}
		der = plain
	case pkcs8PrivateKey, ecPrivateKey:
	default:
		return nil, fmt.Errorf("reading the private key: unknown PEM block %q", block.Type)
	}
	var key any
	var err error
	if block.Type == ecPrivateKey {
		key, err = x509.ParseECPrivateKey(der)
	} else {
		key, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("reading the private key: %T cannot sign", key)
	}
	switch signer.(type) {
	case *ecdsa.PrivateKey, ed25519.PrivateKey:
	default:
		return nil, fmt.Errorf("reading the private key: %T keys are not supported (ECDSA or Ed25519)", key)
	}
	pub, err := newPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return &Key{signer: signer, PublicKey: pub}, nil
}

// ParsePublicKey reads a PEM PKIX public key (cosign.pub).
func ParsePublicKey(pemBytes []byte) (*PublicKey, error) {
	if len(pemBytes) > maxKeyFile {
		return nil, fmt.Errorf("reading the public key: larger than %d bytes", maxKeyFile)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != publicKeyBlock {
		return nil, errors.New("reading the public key: no PEM \"PUBLIC KEY\" block")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("reading the public key: %w", err)
	}
	return newPublicKey(pub)
}

func newPublicKey(pub crypto.PublicKey) (*PublicKey, error) {
	switch pub.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("reading the public key: %T keys are not supported (ECDSA or Ed25519)", pub)
	}
	id, err := dsse.SHA256KeyID(pub)
	if err != nil {
		return nil, fmt.Errorf("reading the public key: %w", err)
	}
	return &PublicKey{public: pub, keyID: id}, nil
}

// MarshalPublicKey writes the public key as PEM (what cosign.pub holds).
func (p *PublicKey) MarshalPublicKey() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(p.public)
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: publicKeyBlock, Bytes: der}), nil
}

// KeyID is the sha256 of the public key (dsse.SHA256KeyID): what envelopes name.
func (p *PublicKey) KeyID() (string, error) { return p.keyID, nil }

// Public returns the public key.
func (p *PublicKey) Public() crypto.PublicKey { return p.public }

// Verify checks sig over data: ECDSA over its sha256 (ASN.1, as cosign signs), Ed25519
// over data itself.
func (p *PublicKey) Verify(_ context.Context, data, sig []byte) error {
	switch pub := p.public.(type) {
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(data)
		if ecdsa.VerifyASN1(pub, sum[:], sig) {
			return nil
		}
	case ed25519.PublicKey:
		if ed25519.Verify(pub, data, sig) {
			return nil
		}
	}
	return errors.New("signature does not match the key")
}

// Sign signs data (see Verify).
func (k *Key) Sign(_ context.Context, data []byte) ([]byte, error) {
	switch s := k.signer.(type) {
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(data)
		return ecdsa.SignASN1(rand.Reader, s, sum[:])
	case ed25519.PrivateKey:
		return ed25519.Sign(s, data), nil
	}
	return nil, fmt.Errorf("signing: %T keys are not supported", k.signer)
}

// EncryptPrivateKey writes a private key in cosign's encrypted PEM format (for tests,
// the demo's throwaway key and people who make a key without cosign).
func EncryptPrivateKey(key crypto.Signer, password []byte) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the private key: %w", err)
	}
	enc, err := encrypted.Encrypt(der, password)
	if err != nil {
		return nil, fmt.Errorf("encrypting the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: sigstorePrivateKey, Bytes: enc}), nil
}
