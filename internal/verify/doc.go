// Package verify checks the signatures on what the sources fetch: Git commits and tags
// (OpenPGP and SSH), Helm chart provenance files and OCI artifacts, and names the signer.
//
// It holds no Kubernetes client: a source controller reads the Secret that spec.verify
// names and hands its data (key name → bytes) to one of
//
//	ParseGitKeys(data) (*GitKeys, error)
//	Git(objects GitObjects, mode Mode, keys *GitKeys) ([]Signer, error)
//	ParseKeyring(data) (openpgp.EntityList, error)
//	Provenance(archive []byte, filename string, prov []byte, keyring) (Signer, error)
//	OCI(ctx, ref name.Digest, provider string, keys map[string][]byte, opts ...remote.Option) (Signer, error)
//
// OCI is what an OCI source calls after resolving its tag to a digest and before using
// anything it pulled: provider "cosign" checks the signatures cosign writes with a key
// pair (classic layout, `<repo>:sha256-<hex>.sig`) against the Secret's PEM public keys;
// "notation" the notation signatures among the artifact's referrers against the Secret's
// PEM CA certificates. Pass the same remote.Options (credentials, transport behind the
// egress guard) as for the pull. Keyless cosign and Sigstore bundles are not verified
// yet.
//
// Every function fails closed: an unsigned object, a signature by a key that is not
// given, a signature that does not match, or input it cannot read is an error, and no
// Signer is returned with an error. Errors name what was checked and why it failed; they
// never hold key material.
package verify
