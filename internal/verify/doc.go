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
//	OCI(ctx, ref name.Digest, check OCICheck, opts ...remote.Option) (Signer, error)
//
// OCI is what an OCI source calls after resolving its tag to a digest and before using
// anything it pulled. Provider "cosign" with PEM public keys checks the signatures cosign
// writes with a key pair: the classic layout (`<repo>:sha256-<hex>.sig`) and Sigstore
// bundles attached as OCI 1.1 referrers (cosign v3, `--new-bundle-format`). With the
// key trusted_root.json (a private Sigstore's TrustedRoot JSON) it checks keyless
// Sigstore bundles with sigstore-go: the certificate chains to the root's Fulcio CA at a
// time its Rekor log or timestamp authority vouches for, a log entry verifies, and the
// certificate's OIDC issuer and subject match one of check.Identities (anchored RE2;
// required). The trusted root is only what the Secret holds: nothing is fetched from the
// public Sigstore instance (no TUF) or any other address. A bundle must sign the
// artifact's manifest digest (cosign's in-toto statement of predicate type
// https://sigstore.dev/cosign/sign/v1, or a message signature); attestations of other
// predicate types are not signatures. Keyless signatures in the classic layout are read
// as the bundle they amount to (certificate and Rekor bundle annotations) and checked the
// same way. "notation" checks the notation signatures among the artifact's
// referrers against the Secret's PEM CA certificates. Pass the same remote.Options
// (credentials, transport behind the egress guard) as for the pull.
//
// Every function fails closed: an unsigned object, a signature by a key that is not
// given, a signature that does not match, or input it cannot read is an error, and no
// Signer is returned with an error. Errors name what was checked and why it failed; they
// never hold key material.
package verify
