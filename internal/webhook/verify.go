package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// signature is what a delivery carries to prove it knows a secret: an
// HMAC-SHA256 of the body (GitHub, Gitea, Bitbucket Server, generic) or the
// secret itself (GitLab's X-Gitlab-Token).
type signature struct {
	body []byte
	// mac is the decoded HMAC-SHA256 the delivery claims; nil when the header
	// was present but unreadable, which verifies against nothing.
	mac []byte
	// token is the plain secret the delivery carries (GitLab).
	token   []byte
	isToken bool
}

// hmacSignature reads a hex HMAC-SHA256 header value. With prefixed, the value
// must read "sha256=<hex>"; without, a bare "<hex>" (Gitea) is accepted too.
func hmacSignature(value string, prefixed bool, body []byte) signature {
	hexMAC, ok := strings.CutPrefix(value, "sha256=")
	if !ok && prefixed {
		return signature{body: body}
	}
	mac, err := hex.DecodeString(strings.TrimSpace(hexMAC))
	if err != nil || len(mac) != sha256.Size {
		return signature{body: body}
	}
	return signature{body: body, mac: mac}
}

// tokenSignature wraps a plain shared token (GitLab).
func tokenSignature(value string) signature {
	return signature{token: []byte(value), isToken: true}
}

// verify reports whether the delivery was made with secret. An empty secret
// verifies nothing: an HMAC keyed with "" is one anybody can compute.
// Both comparisons take the same time whatever the inputs: hmac.Equal for
// MACs; for tokens, SHA-256 of both sides first, so that not even the
// secret's length shows in the timing of subtle.ConstantTimeCompare.
func (s signature) verify(secret []byte) bool {
	secret = secretKey(secret)
	if secret == nil {
		return false
	}
	if s.isToken {
		want, got := sha256.Sum256(secret), sha256.Sum256(s.token)
		return subtle.ConstantTimeCompare(want[:], got[:]) == 1
	}
	m := hmac.New(sha256.New, secret)
	m.Write(s.body)
	return s.mac != nil && hmac.Equal(m.Sum(nil), s.mac)
}

// secretKey returns the usable part of a configured secret: trailing CR and LF
// are dropped, because a secret created with `kubectl create secret
// --from-file` or written with echo usually ends in a newline that the
// provider's settings page never sees. nil means "no secret".
func secretKey(secret []byte) []byte {
	secret = bytes.TrimRight(secret, "\r\n")
	if len(secret) == 0 {
		return nil
	}
	return secret
}
