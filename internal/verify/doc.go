// Package verify checks the signatures on what the sources fetch: Git commits and tags
// (OpenPGP and SSH), Helm chart provenance files and OCI artifacts, and names the signer.
//
// It holds no Kubernetes client: a source controller reads the Secret that spec.verify
// names and hands its data (key name → bytes) to one of
//
//	ParseGitKeys(data) (*GitKeys, error)
//	Git(objects GitObjects, mode Mode, keys *GitKeys) ([]Signer, error)
//	Provenance(chart, prov []byte, keyring map[string][]byte) (Signer, error)
//
// Every function fails closed: an unsigned object, a signature by a key that is not
// given, a signature that does not match, or input it cannot read is an error, and no
// Signer is returned with an error. Errors name what was checked and why it failed; they
// never hold key material.
package verify
