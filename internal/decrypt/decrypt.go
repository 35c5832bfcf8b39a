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
// File and Manifests check the SOPS message authentication code (MAC) in full: it
// covers every value in the order the file holds them. Objects cannot, because a
// decoded object has lost the order of its keys: it checks that every encrypted value
// and the MAC itself were encrypted with the document's data key (AES-GCM, each value
// bound to its path), which catches a changed or swapped ciphertext and a changed MAC,
// but not a changed unencrypted value. Callers that still hold the bytes should prefer
// Manifests.
//
// Errors name the file or object and the keys (age recipients, OpenPGP fingerprints)
// of the document and of the KeySource, never a value of the document.
package decrypt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"
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

// macCheck says how much of the MAC a decryption verifies.
type macCheck int

const (
	// macFull recomputes the MAC over the values in the document's order.
	macFull macCheck = iota
	// macAuthentic only checks that the MAC decrypts with the data key.
	macAuthentic
)

// decrypt loads data in format (an encrypted SOPS document), decrypts its data key
// with d's keys and its values with the data key, checks the MAC as check says and
// returns the plain tree. what names the document in errors.
func (d *Decryptor) decrypt(what string, data []byte, format formats.Format, check macCheck) (tree sops.Tree, err error) {
	defer func() {
		// Malformed input has been seen to make SOPS' stores panic; the panic value
		// is not printed, as it may hold a value of the document.
		if r := recover(); r != nil {
			err = fmt.Errorf("decrypting %s: malformed SOPS document", what)
		}
	}()
	store := newStore(format)
	tree, err = store.LoadEncryptedFile(data)
	if err != nil {
		if errors.Is(err, sops.MetadataNotFound) {
			return sops.Tree{}, fmt.Errorf("decrypting %s: %w", what, err)
		}
		// A store's error may quote the document: only its absence of metadata is told.
		return sops.Tree{}, fmt.Errorf("decrypting %s: malformed SOPS document", what)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{client{d.keys}}, sops.DefaultDecryptionOrder)
	if err != nil {
		return sops.Tree{}, fmt.Errorf("decrypting %s: no key in the decryption Secret decrypts its data key (document keys: %s; keys tried: %s)",
			what, listOrNone(documentKeys(tree.Metadata)), listOrNone(d.keys.Describe()))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return sops.Tree{}, fmt.Errorf("decrypting %s: a value does not decrypt with its data key (tampered ciphertext)", what)
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return sops.Tree{}, fmt.Errorf("decrypting %s: the MAC does not decrypt with the data key (tampered MAC or lastmodified)", what)
	}
	if check == macFull && stored != mac {
		return sops.Tree{}, fmt.Errorf("decrypting %s: the MAC does not match the values (tampered document)", what)
	}
	return tree, nil
}

// documentKeys names the master keys of a SOPS document, as its metadata lists them.
func documentKeys(m sops.Metadata) []string {
	var out []string
	for _, group := range m.KeyGroups {
		for _, k := range group {
			out = append(out, k.TypeToIdentifier()+":"+k.ToString())
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

// client adapts a KeySource to SOPS' key service client, so that SOPS asks it, and
// only it, for data keys.
type client struct {
	keys KeySource
}

func (c client) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	plain, err := c.keys.DecryptDataKey(req.GetKey(), req.GetCiphertext())
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (c client) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("encryption is not supported")
}
