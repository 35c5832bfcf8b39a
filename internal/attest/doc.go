// Package attest makes, signs, keeps and checks signed sync attestations: an in-toto
// statement per successful sync whose subjects are the applied objects (each one's
// identity and a digest of the fields gitsync applied), in a DSSE envelope signed with a
// cosign-format key, kept in a ConfigMap per Application.
package attest
