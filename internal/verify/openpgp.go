package verify

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// readArmoredKeys reads every armored public key block in b: openpgp.ReadArmoredKeyRing
// stops after the first, and a Secret value is often several exports concatenated. Each
// block is decoded on its own (armor.Decode reads ahead of the block it returns).
func readArmoredKeys(b []byte) (openpgp.EntityList, error) {
	var ring openpgp.EntityList
	begin := []byte(pgpPublicKeyBlock)
	for i, chunk := range bytes.Split(b, begin) {
		if i == 0 {
			if len(bytes.TrimSpace(chunk)) > 0 {
				return nil, errors.New("text before the first public key block")
			}
			continue
		}
		block, err := armor.Decode(bytes.NewReader(append(append([]byte{}, begin...), chunk...)))
		if err != nil {
			return nil, err
		}
		if block.Type != openpgp.PublicKeyType {
			return nil, fmt.Errorf("a %q block where a public key block was expected", block.Type)
		}
		list, err := openpgp.ReadKeyRing(block.Body)
		if err != nil {
			return nil, err
		}
		ring = append(ring, list...)
	}
	if len(ring) == 0 {
		return nil, errors.New("no public key found")
	}
	return ring, nil
}

// ParseKeyring reads the data of a keyring Secret (Helm provenance): every value holds
// one or more armored OpenPGP public keys.
func ParseKeyring(data map[string][]byte) (openpgp.EntityList, error) {
	names := make([]string, 0, len(data))
	for name := range data {
		names = append(names, name)
	}
	sort.Strings(names)
	var ring openpgp.EntityList
	for _, name := range names {
		list, err := readArmoredKeys(data[name])
		if err != nil {
			return nil, fmt.Errorf("reading OpenPGP keys in %q: %w", name, err)
		}
		ring = append(ring, list...)
	}
	if len(ring) == 0 {
		return nil, errors.New("no OpenPGP public key found")
	}
	return ring, nil
}
