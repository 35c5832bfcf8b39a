package sopsfile

import (
	"crypto/sha512"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Encryption says how Encrypt encrypts a document.
type Encryption struct {
	// DataKey is the 32-byte AES key of the values.
	DataKey []byte
	// Keys are the master keys (one key group), each with its copy of DataKey in
	// Encrypted: age-armored for KeyAge, ASCII-armored for KeyPGP. Other types are
	// not written.
	Keys []MasterKey
	// EncryptedRegex limits encryption to the values under a key it matches (SOPS'
	// --encrypted-regex); empty: every value but those under a key ending in
	// "_unencrypted".
	EncryptedRegex string
	// LastModified is the time the MAC is bound to; zero: now.
	LastModified time.Time
}

// Encrypt encrypts plain, a YAML or JSON document, as `sops --encrypt` writes it: each
// value (and YAML comment) the rules select encrypted with the data key and bound to
// its path, a MAC over all values, and the "sops" metadata. It is what the demo uses
// to put an encrypted Secret in its repository; tests check it against SOPS itself.
func Encrypt(plain []byte, format Format, e Encryption) ([]byte, error) {
	var branches []Branch
	var err error
	switch format {
	case YAML:
		branches, err = loadYAML(plain)
	case JSON:
		branches, err = loadJSON(plain)
	default:
		return nil, fmt.Errorf("encrypting %s files is not supported", format)
	}
	if err != nil {
		return nil, err
	}
	if len(e.Keys) == 0 {
		return nil, errors.New("no master key")
	}
	r := rules{encryptedRegex: compileRule(e.EncryptedRegex)}
	if e.EncryptedRegex == "" {
		r.unencryptedSuffix = "_unencrypted"
	}
	h := sha512.New()
	leaf := func(v any, path []string, comments [][]string) (any, error) {
		_, isComment := v.(Comment)
		enc := r.encrypted(path, comments, isComment)
		if !isComment {
			h.Write(macBytes(v))
		}
		if !enc {
			return v, nil
		}
		return encryptValue(v, e.DataKey, strings.Join(path, ":")+":")
	}
	for _, b := range branches {
		for _, item := range b {
			if item.Key == metadataKey {
				return nil, errors.New("the document already has a sops entry")
			}
		}
		if err := walkBranch(b, nil, nil, leaf); err != nil {
			return nil, err
		}
	}
	lm := e.LastModified
	if lm.IsZero() {
		lm = time.Now()
	}
	lastModified := lm.UTC().Format(time.RFC3339)
	mac, err := encryptValue(fmt.Sprintf("%X", h.Sum(nil)), e.DataKey, lastModified)
	if err != nil {
		return nil, err
	}
	meta := metadataBranch(e, r, lastModified, mac)
	for i := range branches {
		branches[i] = append(branches[i], Item{Key: metadataKey, Value: meta})
	}
	return Emit(branches, format)
}

// metadataBranch is the "sops" entry, keys sorted as SOPS writes them.
func metadataBranch(e Encryption, r rules, lastModified, mac string) Branch {
	var ages, pgps []any
	created := time.Now().UTC().Format(time.RFC3339)
	for _, k := range e.Keys {
		switch k.Type {
		case KeyAge:
			ages = append(ages, Branch{{Key: "enc", Value: k.Encrypted}, {Key: "recipient", Value: k.ID}})
		case KeyPGP:
			pgps = append(pgps, Branch{{Key: "created_at", Value: created}, {Key: "enc", Value: k.Encrypted}, {Key: "fp", Value: k.ID}})
		}
	}
	b := Branch{{Key: "lastmodified", Value: lastModified}, {Key: "mac", Value: mac}, {Key: "version", Value: "3.13.3"}}
	if ages != nil {
		b = append(b, Item{Key: "age", Value: ages})
	}
	if pgps != nil {
		b = append(b, Item{Key: "pgp", Value: pgps})
	}
	if e.EncryptedRegex != "" {
		b = append(b, Item{Key: "encrypted_regex", Value: e.EncryptedRegex})
	} else {
		b = append(b, Item{Key: "unencrypted_suffix", Value: r.unencryptedSuffix})
	}
	sort.Slice(b, func(i, j int) bool { return b[i].Key.(string) < b[j].Key.(string) })
	return b
}
