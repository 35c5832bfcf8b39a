package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Keys of a signingKey Secret.
const (
	SigningKeyPGP        = "git.asc"
	SigningKeyPassphrase = "passphrase"
	SigningKeySSH        = "identity"
)

// maxKeyBytes bounds a key read from a Secret.
const maxKeyBytes = 64 << 10

// SignerFromSecret builds the commit signer of a signingKey Secret's data: an armored
// OpenPGP private key in git.asc (passphrase optional), or an SSH private key in
// identity (signed as `git commit -S` with gpg.format=ssh does). Errors never quote the
// Secret's content.
func SignerFromSecret(data map[string][]byte) (git.Signer, error) {
	pass := bytes.TrimRight(data[SigningKeyPassphrase], "\r\n")
	switch {
	case len(data[SigningKeyPGP]) > 0:
		if len(data[SigningKeyPGP]) > maxKeyBytes {
			return nil, fmt.Errorf("%s is larger than %d bytes", SigningKeyPGP, maxKeyBytes)
		}
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data[SigningKeyPGP]))
		if err != nil || len(entities) == 0 {
			return nil, fmt.Errorf("%s holds no armored OpenPGP key", SigningKeyPGP)
		}
		e := entities[0]
		if e.PrivateKey == nil {
			return nil, fmt.Errorf("%s holds a public key, not a private one", SigningKeyPGP)
		}
		if e.PrivateKey.Encrypted {
			if len(pass) == 0 {
				return nil, fmt.Errorf("%s is encrypted and the secret has no %s", SigningKeyPGP, SigningKeyPassphrase)
			}
			if err := e.PrivateKey.Decrypt(pass); err != nil {
				return nil, fmt.Errorf("%s does not decrypt with %s", SigningKeyPGP, SigningKeyPassphrase)
			}
		}
		return pgpSigner{e}, nil
	case len(data[SigningKeySSH]) > 0:
		if len(data[SigningKeySSH]) > maxKeyBytes {
			return nil, fmt.Errorf("%s is larger than %d bytes", SigningKeySSH, maxKeyBytes)
		}
		var s ssh.Signer
		var err error
		if len(pass) > 0 {
			s, err = ssh.ParsePrivateKeyWithPassphrase(data[SigningKeySSH], pass)
		} else {
			s, err = ssh.ParsePrivateKey(data[SigningKeySSH])
		}
		if err != nil {
			return nil, fmt.Errorf("%s is not an SSH private key (or its passphrase is wrong)", SigningKeySSH)
		}
		return sshSigner{s}, nil
	}
	return nil, errors.New("the signing key secret has neither git.asc nor identity")
}

type pgpSigner struct{ e *openpgp.Entity }

func (s pgpSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.e, message, nil); err != nil {
		return nil, fmt.Errorf("signing the commit: %w", err)
	}
	return b.Bytes(), nil
}

type sshSigner struct{ s ssh.Signer }

// sshNamespace is the namespace git signs commits in.
const sshNamespace = "git"

func (s sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.s, sshsig.HashSHA512, sshNamespace)
	if err != nil {
		return nil, fmt.Errorf("signing the commit: %w", err)
	}
	return sshsig.Armor(sig), nil
}
