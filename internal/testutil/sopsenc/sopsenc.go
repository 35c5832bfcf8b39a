// Package sopsenc encrypts files with the SOPS project's own packages, as `sops --encrypt` does, for tests.
//
// Tests use it to make their encrypted files (no private key is ever checked in) and to
// prove that internal/sopsfile and internal/decrypt read what SOPS writes and write
// what SOPS reads. It links github.com/getsops/sops/v3 and with it the cloud key
// services' SDKs, so only tests may import it: internal/layering fails when a
// non-test package reaches SOPS.
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
	"github.com/getsops/sops/v3/shamir"
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
	// The other rules of what is encrypted (at most one rule may be set; none:
	// unencrypted_suffix "_unencrypted", SOPS' default).
	UnencryptedSuffix, EncryptedSuffix, UnencryptedRegex string
	UnencryptedCommentRegex, EncryptedCommentRegex       string
	// MACOnlyEncrypted makes the MAC cover the encrypted values only.
	MACOnlyEncrypted bool
	// Groups, when set, replace Age and PGP: one key group each, the data key split
	// with Shamir's scheme so that Threshold groups recover it.
	Groups    []Options
	Threshold int
}

// Encrypt encrypts plain, a file in format (by name: .yaml/.yml, .json, .env, .ini, any
// other name a binary file), for the
// recipients of opts, as SOPS writes it: values encrypted with a fresh data key, the
// data key encrypted for each recipient, a MAC over the values.
func Encrypt(name string, plain []byte, opts Options) ([]byte, error) {
	enc, _, err := EncryptKey(name, plain, opts)
	return enc, err
}

// EncryptKey is Encrypt that also returns the data key (for DecryptWithDataKey).
func EncryptKey(name string, plain []byte, opts Options) (enc, dataKey []byte, err error) {
	st := store(name)
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting %s: %w", name, err)
	}
	dataKey = make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, nil, err
	}
	var groups []sops.KeyGroup
	if len(opts.Groups) == 0 {
		group, err := keyGroup(opts, dataKey)
		if err != nil {
			return nil, nil, err
		}
		groups = append(groups, group)
	} else {
		parts, err := shamir.Split(dataKey, len(opts.Groups), opts.Threshold)
		if err != nil {
			return nil, nil, err
		}
		for i, g := range opts.Groups {
			group, err := keyGroup(g, parts[i])
			if err != nil {
				return nil, nil, err
			}
			groups = append(groups, group)
		}
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:               groups,
		ShamirThreshold:         opts.Threshold,
		EncryptedRegex:          opts.EncryptedRegex,
		UnencryptedSuffix:       opts.UnencryptedSuffix,
		EncryptedSuffix:         opts.EncryptedSuffix,
		UnencryptedRegex:        opts.UnencryptedRegex,
		UnencryptedCommentRegex: opts.UnencryptedCommentRegex,
		EncryptedCommentRegex:   opts.EncryptedCommentRegex,
		MACOnlyEncrypted:        opts.MACOnlyEncrypted,
		Version:                 "3.13.3",
	}}
	if opts.UnencryptedSuffix == "" && opts.EncryptedSuffix == "" && opts.EncryptedRegex == "" && opts.UnencryptedRegex == "" &&
		opts.UnencryptedCommentRegex == "" && opts.EncryptedCommentRegex == "" {
		tree.Metadata.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypting %s: %w", name, err)
	}
	tree.Metadata.LastModified = time.Now().UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, nil, err
	}
	enc, err = st.EmitEncryptedFile(tree)
	return enc, dataKey, err
}

// keyGroup encrypts key (the data key, or a Shamir share of it) for the recipients of
// opts.
func keyGroup(opts Options, key []byte) (sops.KeyGroup, error) {
	var group sops.KeyGroup
	for _, r := range opts.Age {
		mk := &sopsage.MasterKey{Recipient: r}
		if err := mk.Encrypt(key); err != nil {
			return nil, fmt.Errorf("encrypting for %s: %w", r, err)
		}
		group = append(group, mk)
	}
	for _, e := range opts.PGP {
		mk, err := pgpMaster(e, key)
		if err != nil {
			return nil, err
		}
		group = append(group, mk)
	}
	if len(group) == 0 {
		return nil, errors.New("encrypting: no recipient")
	}
	return group, nil
}

// store is SOPS' own store for the format of the file name.
func store(name string) sops.Store {
	switch formats.FormatForPath(name) {
	case formats.Yaml:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case formats.Json:
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case formats.Dotenv:
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	case formats.Ini:
		return ini.NewStore(&config.INIStoreConfig{})
	default:
		return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
	}
}

// Plain is what `sops --decrypt` prints for a file name that held plain: SOPS' store
// for the format reading and writing it back.
func Plain(name string, plain []byte) ([]byte, error) {
	st := store(name)
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	return st.EmitPlainFile(branches)
}

// DecryptWithDataKey decrypts enc (in the format of name) with its data key through
// SOPS' own packages, checking the MAC as `sops --decrypt` does, and returns the plain
// file: the check that a file written by another encryptor is one SOPS reads.
func DecryptWithDataKey(name string, enc, dataKey []byte) ([]byte, error) {
	st := store(name)
	tree, err := st.LoadEncryptedFile(enc)
	if err != nil {
		return nil, err
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	if stored != mac {
		return nil, sops.MacMismatch
	}
	return st.EmitPlainFile(tree.Branches)
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
