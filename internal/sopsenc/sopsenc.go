// Package sopsenc encrypts files as `sops --encrypt` does, in process, for age
// recipients and OpenPGP public keys: what the demo uses to put an encrypted Secret in
// its repository, and what tests use to make their encrypted files (no private key is
// ever checked in). The operator only decrypts (internal/decrypt); nothing in its code
// path imports this package.
package sopsenc

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// Options say what to encrypt, and for whom.
type Options struct {
	// Age recipients ("age1…") that may decrypt.
	Age []string
	// PGP public keys that may decrypt.
	PGP []*openpgp.Entity
	// EncryptedRegex limits encryption to the keys it matches (SOPS'
	// --encrypted-regex; e.g. "^(data|stringData)$" for Kubernetes Secrets); empty:
	// every value.
	EncryptedRegex string
}

// Encrypt encrypts plain, a file in format (by name: .yaml/.yml, .json, .env, .ini, any
// other name a binary file), for the
// recipients of opts, as SOPS writes it: values encrypted with a fresh data key, the
// data key encrypted for each recipient, a MAC over the values.
func Encrypt(name string, plain []byte, opts Options) ([]byte, error) {
	format := formats.FormatForPath(name)
	var st interface {
		sops.PlainFileLoader
		sops.EncryptedFileEmitter
	}
	switch format {
	case formats.Yaml:
		st = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case formats.Json:
		st = sopsjson.NewStore(&config.JSONStoreConfig{})
	case formats.Dotenv:
		st = dotenv.NewStore(&config.DotenvStoreConfig{})
	case formats.Ini:
		st = ini.NewStore(&config.INIStoreConfig{})
	default:
		st = sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", name, err)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	var group sops.KeyGroup
	for _, r := range opts.Age {
		mk := &sopsage.MasterKey{Recipient: r}
		if err := mk.Encrypt(dataKey); err != nil {
			return nil, fmt.Errorf("encrypting for %s: %w", r, err)
		}
		group = append(group, mk)
	}
	for _, e := range opts.PGP {
		mk, err := pgpMaster(e, dataKey)
		if err != nil {
			return nil, err
		}
		group = append(group, mk)
	}
	if len(group) == 0 {
		return nil, errors.New("encrypting: no recipient")
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{group},
		EncryptedRegex: opts.EncryptedRegex,
		Version:        "3.13.3",
	}}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", name, err)
	}
	tree.Metadata.LastModified = time.Now().UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}

// pgpMaster encrypts the data key for e with go-crypto (SOPS' own pgp package would
// look for the public key in a GnuPG home).
func pgpMaster(e *openpgp.Entity, dataKey []byte) (keys.MasterKey, error) {
	var buf bytes.Buffer
	aw, err := pgparmor.Encode(&buf, "PGP MESSAGE", nil)
	if err != nil {
		return nil, err
	}
	w, err := openpgp.Encrypt(aw, []*openpgp.Entity{e}, nil, nil, nil)
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
	mk := pgp.NewMasterKeyFromFingerprint(strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)))
	mk.EncryptedKey = buf.String()
	return mk, nil
}

// AgeKey makes an age identity: its recipient and the text of a *.agekey Secret entry.
func AgeKey() (recipient string, secret []byte, err error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", nil, err
	}
	return id.Recipient().String(), []byte("# made by gitsync\n" + id.String() + "\n"), nil
}

// PGPKey makes an OpenPGP key (EdDSA with an ECDH subkey) without a passphrase: the
// entity to encrypt for and the armored private key of a *.asc Secret entry.
func PGPKey(name string) (*openpgp.Entity, []byte, error) {
	e, err := openpgp.NewEntity(name, "", "", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	w, err := pgparmor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return e, buf.Bytes(), nil
}
