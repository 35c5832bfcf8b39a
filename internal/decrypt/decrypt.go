// Package decrypt decrypts SOPS-encrypted documents and files of a render with keys from a Secret.
//
// The keys come from one KeySource (Keys: age identities and OpenPGP private keys
// held in memory); nothing else is consulted — no environment variable, no GnuPG home,
// no agent, no cloud credentials — so one tenant's keys never decrypt another's files.
//
// Three entry points, by what the caller holds:
//   - File: a whole file as read from disk (YAML, JSON, dotenv, INI or binary, by its
//     name), e.g. a kustomize secretGenerator source or a Helm values file.
//   - Manifests: a stream of YAML documents (a manifest file, a chart's rendered
//     template), of which the SOPS-encrypted ones are decrypted.
//   - Objects: decoded objects, e.g. a render's output.
//
// Every decryption checks the SOPS message authentication code (MAC) in full, as SOPS
// does: it covers every value in the order the file holds them, so a document is only
// decrypted from its file's bytes. A decoded object has lost the order of its keys:
// Objects refuses a SOPS document (one whose file was not read as SOPS, e.g. for a
// missing MAC), and decrypts only whole encrypted files held in a Secret's entries. A
// document with SOPS metadata and no MAC is refused: without one, anyone could change
// its unencrypted values (kind, namespace, metadata) or drop values.
//
// Every YAML stream is held to the YAML budget (internal/yamlbudget) before it is
// parsed, so that aliases in any of its documents cannot expand without bound.
//
// Errors name the file or object and the keys (age recipients, OpenPGP fingerprints)
// of the document and of the KeySource, never a value of the document.
//
// The SOPS format is read by internal/sopsfile, not by SOPS' own packages, which cannot
// be linked without the cloud key services' SDKs (see that package).
package decrypt

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gitsync-dev/gitsync/internal/sopsfile"
	"github.com/gitsync-dev/gitsync/internal/yamlbudget"
)

// Decryptor decrypts SOPS documents with the keys of one KeySource. It is safe for
// concurrent use.
type Decryptor struct {
	keys KeySource
}

// NewDecryptor returns a Decryptor that decrypts with keys only.
func NewDecryptor(keys KeySource) (*Decryptor, error) {
	if keys == nil {
		return nil, errors.New("no key source")
	}
	return &Decryptor{keys: keys}, nil
}

// decrypt loads data in format (an encrypted SOPS document), decrypts its data key
// with d's keys and its values with the data key, checks the MAC in full and returns
// the plain document. what names the document in errors. A document without SOPS
// metadata is an error wrapping sopsfile.ErrNoMetadata; one over the YAML budget wraps
// yamlbudget.ErrTooLarge; one whose metadata has no MAC wraps sopsfile.ErrNoMAC.
func (d *Decryptor) decrypt(what string, data []byte, format sopsfile.Format) (file *sopsfile.File, err error) {
	defer func() {
		// The parsers are not expected to panic on malformed input, but a panic's
		// value may hold a value of the document, so it is never printed.
		if r := recover(); r != nil {
			file, err = nil, fmt.Errorf("decrypting %s: malformed SOPS document", what)
		}
	}()
	if format == sopsfile.YAML {
		// Checked here too, to name the document: Load checks the stream again.
		if err := yamlbudget.Check(what, data); err != nil {
			return nil, fmt.Errorf("decrypting %w", err)
		}
	}
	file, err = sopsfile.Load(data, format)
	if err != nil {
		if errors.Is(err, sopsfile.ErrNoMetadata) || errors.Is(err, yamlbudget.ErrTooLarge) {
			return nil, fmt.Errorf("decrypting %s: %w", what, err)
		}
		// Load's errors never quote the document, but only its kind is told.
		return nil, fmt.Errorf("decrypting %s: malformed SOPS document", what)
	}
	if file.Metadata.MAC == "" {
		return nil, noMAC(what)
	}
	key, err := d.dataKey(file.Metadata)
	if err != nil {
		return nil, fmt.Errorf("decrypting %s: %w (document keys: %s; keys tried: %s)",
			what, err, listOrNone(documentKeys(file.Metadata)), listOrNone(d.keys.Describe()))
	}
	switch err := file.Decrypt(key); {
	case err == nil:
		return file, nil
	case errors.Is(err, sopsfile.ErrNoMAC):
		return nil, noMAC(what)
	case errors.Is(err, sopsfile.ErrMACKey):
		return nil, fmt.Errorf("decrypting %s: the MAC does not decrypt with the data key (tampered MAC or lastmodified)", what)
	case errors.Is(err, sopsfile.ErrMACMismatch):
		return nil, fmt.Errorf("decrypting %s: the MAC does not match the values (tampered document)", what)
	default:
		return nil, fmt.Errorf("decrypting %s: a value does not decrypt with its data key (tampered ciphertext)", what)
	}
}

// noMAC is the error for the SOPS document what whose metadata has no MAC.
func noMAC(what string) error {
	return fmt.Errorf("decrypting %s: %w: SOPS writes one over every value, so a document without it "+
		"is refused (tampered document: nothing binds its unencrypted values to its keys)", what, sopsfile.ErrNoMAC)
}

// decryptionOrder is the order in which the master keys of a group are tried, as SOPS
// tries them: age, then OpenPGP, then the others in the file's order.
var decryptionOrder = map[string]int{sopsfile.KeyAge: 0, sopsfile.KeyPGP: 1}

// dataKey recovers the data key of a document: from any key of its one key group, or,
// with several groups, from the Shamir shares of at least the threshold of groups.
func (d *Decryptor) dataKey(md *sopsfile.Metadata) ([]byte, error) {
	var parts [][]byte
	for _, group := range md.Groups {
		if part, ok := d.groupKey(group); ok {
			parts = append(parts, part)
		}
	}
	errNone := errors.New("no key in the decryption Secret decrypts its data key")
	if len(md.Groups) == 1 {
		if len(parts) != 1 {
			return nil, errNone
		}
		return parts[0], nil
	}
	if len(parts) < md.Threshold || len(parts) == 0 {
		return nil, fmt.Errorf("%w (%d of %d key groups needed, %d decrypted)", errNone, md.Threshold, len(md.Groups), len(parts))
	}
	key, err := sopsfile.CombineShares(parts)
	if err != nil {
		return nil, fmt.Errorf("the key group shares do not combine: %w", err)
	}
	return key, nil
}

// groupKey returns the group's copy (or share) of the data key from the first of its
// master keys that d's keys decrypt.
func (d *Decryptor) groupKey(group []sopsfile.MasterKey) ([]byte, bool) {
	order := make([]sopsfile.MasterKey, len(group))
	copy(order, group)
	rank := func(k sopsfile.MasterKey) int {
		if r, ok := decryptionOrder[k.Type]; ok {
			return r
		}
		return len(decryptionOrder)
	}
	slices.SortStableFunc(order, func(a, b sopsfile.MasterKey) int { return rank(a) - rank(b) })
	for _, k := range order {
		if part, err := d.keys.DecryptDataKey(k); err == nil {
			return part, true
		}
	}
	return nil, false
}

// documentKeys names the master keys of a SOPS document, as its metadata lists them.
func documentKeys(md *sopsfile.Metadata) []string {
	var out []string
	for _, group := range md.Groups {
		for _, k := range group {
			out = append(out, k.String())
		}
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
