package attest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Sign signs a statement into a DSSE envelope (JSON) and returns it with its digest
// ("sha256:<hex>" of the envelope's bytes, as status.history[].attestation holds it).
func Sign(ctx context.Context, key *Key, statement []byte) (envelope []byte, digest string, err error) {
	signer, err := dsse.NewEnvelopeSigner(key)
	if err != nil {
		return nil, "", fmt.Errorf("signing the statement: %w", err)
	}
	env, err := signer.SignPayload(ctx, PayloadType, statement)
	if err != nil {
		return nil, "", fmt.Errorf("signing the statement: %w", err)
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the envelope: %w", err)
	}
	return b, Digest(b), nil
}

// Digest is the digest of an envelope's bytes.
func Digest(envelope []byte) string {
	sum := sha256.Sum256(envelope)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ErrForged is returned when no signature of an envelope is by the trusted key.
var ErrForged = errors.New("the attestation is not signed by the trusted key")

// Verify checks that the envelope is signed by pub and returns its statement, parsed
// and checked (ParseStatement). Nothing in an envelope is trusted before this.
func Verify(ctx context.Context, pub *PublicKey, envelope []byte) (*Parsed, error) {
	env := &dsse.Envelope{}
	if err := json.Unmarshal(envelope, env); err != nil {
		return nil, fmt.Errorf("decoding the envelope: %w", err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("the envelope's payload type is %q, not %q", env.PayloadType, PayloadType)
	}
	verifier, err := dsse.NewEnvelopeVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("verifying the envelope: %w", err)
	}
	_, payload, err := verifier.VerifyAndDecode(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrForged, err)
	}
	return ParseStatement(payload)
}
