package verify

import (
	"fmt"
	"path"

	"github.com/ProtonMail/go-crypto/openpgp"
	"helm.sh/helm/v4/pkg/provenance"
)

// MaxProvenanceSize bounds a .prov file read: Helm's are a few KiB.
const MaxProvenanceSize = 1 << 20

// Provenance verifies a Helm chart archive against its provenance file (the clear-signed
// `<archive>.prov` Helm writes with `helm package --sign`): the signature must be made by
// a key of keyring (see ParseKeyring), and the archive's sha256 must be the one the file
// states for filename (the archive's base name, as in the chart's URL). It uses Helm's
// own provenance package.
func Provenance(archive []byte, filename string, prov []byte, keyring openpgp.EntityList) (Signer, error) {
	name := path.Base(filename)
	if len(prov) == 0 {
		return Signer{}, fmt.Errorf("%w: chart %s has no provenance file", ErrUnverified, name)
	}
	if len(prov) > MaxProvenanceSize {
		return Signer{}, fmt.Errorf("%w: provenance file of chart %s is over %d bytes", ErrUnverified, name, MaxProvenanceSize)
	}
	if len(keyring) == 0 {
		return Signer{}, fmt.Errorf("no keys to verify chart %s with", name)
	}
	v, err := (&provenance.Signatory{KeyRing: keyring}).Verify(archive, prov, name)
	if err != nil {
		return Signer{}, fmt.Errorf("%w: chart %s: %w", ErrUnverified, name, err)
	}
	s := openpgpSigner(v.SignedBy)
	s.Scheme = "helm"
	return s, nil
}
