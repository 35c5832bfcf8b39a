package decrypt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
)

// Suffixes of the Secret data keys that hold private keys.
const (
	// AgeKeySuffix marks age identities (X25519 or hybrid post-quantum), one or more
	// lines, comments allowed.
	AgeKeySuffix = ".agekey"
	// PGPKeySuffix marks ASCII-armored OpenPGP private keys.
	PGPKeySuffix = ".asc"
)

// ErrNoKey is wrapped by a KeySource's error when it holds no key for the master key
// it was asked about.
var ErrNoKey = errors.New("no matching key")

// KeySource decrypts the data key of a SOPS document: the copy of it that one of the
// document's master keys (an age recipient, an OpenPGP key, later a KMS key) encrypted.
// It is the one place keys come from, so that KMS or Vault can be added beside Keys.
type KeySource interface {
	// DecryptDataKey returns the data key held in key.Encrypted, the document's copy
	// for key. It returns an error wrapping ErrNoKey when it has no key for key. Its
	// errors never contain key material.
	DecryptDataKey(key sopsfile.MasterKey) ([]byte, error)
	// Describe names the keys it holds (age recipients, OpenPGP fingerprints) for
	// error messages.
	Describe() []string
}

// Keys holds the age identities and OpenPGP private keys of a decryption Secret, in
// memory only: no GnuPG home, no environment variable and no agent is consulted.
// It is a KeySource.
type Keys struct {
	ages      []age.Identity
	agesNames []string
	pgp       openpgp.EntityList
}

// NewKeys reads the keys from data, the data of a decryption Secret: every entry whose
// name ends in AgeKeySuffix is parsed as age identities, every entry ending in
// PGPKeySuffix as armored OpenPGP keys; other entries are ignored. An entry that does
// not parse is an error naming the entry (not its content); so is an OpenPGP key
// without private key material. Data with no keys at all is an error.
func NewKeys(data map[string][]byte) (*Keys, error) {
	names := make([]string, 0, len(data))
	for name := range data {
		names = append(names, name)
	}
	sort.Strings(names)
	k := &Keys{}
	for _, name := range names {
		switch path.Ext(name) {
		case AgeKeySuffix:
			ids, err := age.ParseIdentities(bytes.NewReader(data[name]))
			if err != nil {
				return nil, fmt.Errorf("reading age identities from %q: %w", name, redactParseError(err))
			}
			for _, id := range ids {
				k.ages = append(k.ages, id)
				k.agesNames = append(k.agesNames, ageRecipient(id))
			}
		case PGPKeySuffix:
			entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data[name]))
			if err != nil {
				return nil, fmt.Errorf("reading OpenPGP keys from %q: %w", name, redactParseError(err))
			}
			for _, e := range entities {
				if e.PrivateKey == nil {
					return nil, fmt.Errorf("reading OpenPGP keys from %q: key %s has no private key", name, fingerprint(e))
				}
				if e.PrivateKey.Encrypted {
					return nil, fmt.Errorf("reading OpenPGP keys from %q: key %s is protected by a passphrase", name, fingerprint(e))
				}
			}
			k.pgp = append(k.pgp, entities...)
		}
	}
	if len(k.ages) == 0 && len(k.pgp) == 0 {
		return nil, fmt.Errorf("no keys: no data entry ends in %s or %s", AgeKeySuffix, PGPKeySuffix)
	}
	return k, nil
}

// Describe names the keys: "age:<recipient>" and "pgp:<fingerprint>", in the order of
// the Secret's sorted entry names.
func (k *Keys) Describe() []string {
	out := make([]string, 0, len(k.agesNames)+len(k.pgp))
	for _, r := range k.agesNames {
		out = append(out, "age:"+r)
	}
	for _, e := range k.pgp {
		out = append(out, "pgp:"+fingerprint(e))
	}
	return out
}

// DecryptDataKey decrypts the data key with the age identities for an age master key
// and with the OpenPGP keys for an OpenPGP master key. Other kinds of master key wrap
// ErrNoKey.
func (k *Keys) DecryptDataKey(key sopsfile.MasterKey) ([]byte, error) {
	encrypted := []byte(key.Encrypted)
	switch key.Type {
	case sopsfile.KeyAge:
		if len(k.ages) == 0 {
			return nil, fmt.Errorf("age recipient %s: %w", key.ID, ErrNoKey)
		}
		r, err := age.Decrypt(armor.NewReader(bytes.NewReader(encrypted)), k.ages...)
		if err != nil {
			var none *age.NoIdentityMatchError
			if errors.As(err, &none) {
				return nil, fmt.Errorf("age recipient %s: %w", key.ID, ErrNoKey)
			}
			return nil, fmt.Errorf("age recipient %s: %w", key.ID, err)
		}
		return io.ReadAll(r)
	case sopsfile.KeyPGP:
		if len(k.pgp) == 0 {
			return nil, fmt.Errorf("OpenPGP key %s: %w", key.ID, ErrNoKey)
		}
		md, err := openpgp.ReadMessage(pgpMessage(encrypted), k.pgp, nil, nil)
		if err != nil {
			if errors.Is(err, pgperrors.ErrKeyIncorrect) {
				return nil, fmt.Errorf("OpenPGP key %s: %w", key.ID, ErrNoKey)
			}
			return nil, fmt.Errorf("OpenPGP key %s: %w", key.ID, err)
		}
		return io.ReadAll(md.UnverifiedBody)
	default:
		return nil, fmt.Errorf("master key %s: %w", key, ErrNoKey)
	}
}

// pgpMessage returns a reader of the binary OpenPGP message in encrypted, which SOPS
// stores ASCII-armored.
func pgpMessage(encrypted []byte) io.Reader {
	if block, err := pgparmor.Decode(bytes.NewReader(encrypted)); err == nil {
		return block.Body
	}
	return bytes.NewReader(encrypted)
}

// ageRecipient is the public recipient of an identity, or its type when it has none
// that can be printed.
func ageRecipient(id age.Identity) string {
	switch i := id.(type) {
	case *age.X25519Identity:
		return i.Recipient().String()
	case *age.HybridIdentity:
		return i.Recipient().String()
	default:
		return fmt.Sprintf("%T", id)
	}
}

// fingerprint is the upper-case hex fingerprint of an OpenPGP key, as SOPS writes it.
func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

// redactParseError keeps a key parser's error from echoing the key: age quotes the
// offending line, which may be a secret key.
func redactParseError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "AGE-SECRET-KEY") || strings.Contains(msg, "PRIVATE KEY") {
		return errors.New("malformed key data")
	}
	return err
}
