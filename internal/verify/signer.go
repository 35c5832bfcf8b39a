package verify

import (
	"errors"
	"strings"
)

// ErrUnverified is wrapped by every error that says a signature did not verify (as
// opposed to keys that could not be read).
var ErrUnverified = errors.New("signature not verified")

// Signer is who signed an object: the key's fingerprint and the identity the keys give
// it (an OpenPGP user ID, the principals of an SSH allowed_signers entry, a certificate's
// subject).
type Signer struct {
	// Scheme is "openpgp", "ssh", "helm" (a .prov file, OpenPGP), "cosign" or "notation".
	Scheme string
	// Fingerprint identifies the key: upper-case hex for OpenPGP, "SHA256:…" for SSH,
	// "sha256:…" of the public key or certificate otherwise; "" for cosign keyless.
	Fingerprint string
	// Identity is who the key belongs to, "" when the keys do not say.
	Identity string
}

// String is "<scheme>:<fingerprint>" followed by " (<identity>)" when known: the form
// status.artifact.signer and history entries carry. A keyless signer has no fingerprint
// (its certificate is short-lived): its String is its identity, "<subject> (issuer
// <issuer>)".
func (s Signer) String() string {
	if s.Fingerprint == "" && s.Identity != "" {
		return s.Identity
	}
	out := s.Scheme + ":" + s.Fingerprint
	if s.Identity != "" {
		out += " (" + s.Identity + ")"
	}
	return out
}

// Join is the signers' Strings, distinct, in order, separated by ", ".
func Join(signers []Signer) string {
	var parts []string
	seen := map[string]bool{}
	for _, s := range signers {
		if str := s.String(); !seen[str] {
			seen[str] = true
			parts = append(parts, str)
		}
	}
	return strings.Join(parts, ", ")
}
