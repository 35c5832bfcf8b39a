package signing

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
)

// Media and predicate types of what cosign v3 attaches to an image it signs.
const (
	bundleMediaType     = "application/vnd.dev.sigstore.bundle.v0.3+json"
	cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"
	inTotoPayloadType   = "application/vnd.in-toto+json"
	emptyJSONMediaType  = "application/vnd.oci.empty.v1+json"
)

// Sigstore is a private Sigstore instance in memory (sigstore-go's VirtualSigstore: a
// Fulcio CA, a Rekor log and a timestamp authority) that signs keyless bundles.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore starts a private Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// TrustedRoot is the instance's trusted_root.json: its Fulcio CA chain, Rekor log key and
// timestamp authority (no CT log: the virtual Fulcio embeds no SCTs).
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	return s.trustedRoot(t, true)
}

// TrustedRootWithoutLog is TrustedRoot without the Rekor log: signing times come from the
// timestamp authority alone.
func (s *Sigstore) TrustedRootWithoutLog(t testing.TB) []byte {
	t.Helper()
	return s.trustedRoot(t, false)
}

func (s *Sigstore) trustedRoot(t testing.TB, withLog bool) []byte {
	t.Helper()
	// The virtual log's ID is its hex key ID as text; a trusted root holds the raw ID.
	logs := map[string]*root.TransparencyLog{}
	for id, l := range s.vs.RekorLogs() {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		logs[id] = &c
	}
	if !withLog {
		logs = nil
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), nil,
		s.vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SignStatement is the in-toto statement cosign v3 signs for an image: predicate type
// https://sigstore.dev/cosign/sign/v1, subject the manifest digest ("sha256:<hex>").
func SignStatement(t testing.TB, repository, digest string) []byte {
	t.Helper()
	return statement(t, repository, digest, cosignSignPredicate)
}

func statement(t testing.TB, repository, digest, predicateType string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []map[string]any{{"name": repository, "digest": map[string]string{"sha256": strings.TrimPrefix(digest, "sha256:")}}},
		"predicateType": predicateType,
		"predicate":     map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bundle signs statement (an in-toto statement, see SignStatement) keyless for the OIDC
// identity subject of issuer, and returns the Sigstore bundle (v0.3 JSON) cosign v3
// would write: the leaf certificate, a Rekor entry with its inclusion proof, an RFC 3161
// timestamp and the DSSE envelope.
func (s *Sigstore) Bundle(t testing.TB, statement []byte, subject, issuer string) []byte {
	t.Helper()
	e, err := s.vs.AttestAtTime(subject, issuer, statement, time.Now().Add(time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.EnvelopeContent().RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	tsrs, err := e.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	vm := &protobundle.VerificationMaterial{
		Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
		TimestampVerificationData: &protobundle.TimestampVerificationData{},
	}
	for _, entry := range entries {
		tle := entry.TransparencyLogEntry()
		// The virtual log's entries are Rekor v1 "dsse" entries; their kind is not in
		// the parsed entry's protobuf form, which a bundle needs.
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		vm.TlogEntries = append(vm.TlogEntries, tle)
	}
	for _, tsr := range tsrs {
		vm.TimestampVerificationData.Rfc3161Timestamps = append(vm.TimestampVerificationData.Rfc3161Timestamps,
			&protocommon.RFC3161SignedTimestamp{SignedTimestamp: tsr})
	}
	return marshalBundle(t, &protobundle.Bundle{MediaType: bundleMediaType, VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig}}}}})
}

// KeyBundle signs statement with key in a DSSE envelope and returns the Sigstore bundle
// cosign v3 writes for `cosign sign --key` with no transparency log upload.
func KeyBundle(t testing.TB, key CosignKey, statement []byte) []byte {
	t.Helper()
	pae := fmt.Sprintf("DSSEv1 %d %s %d %s", len(inTotoPayloadType), inTotoPayloadType, len(statement), statement)
	sum := sha256.Sum256([]byte(pae))
	sig, err := key.priv.Sign(rand.Reader, sum[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return marshalBundle(t, &protobundle.Bundle{MediaType: bundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: key.Fingerprint}}},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: statement, PayloadType: inTotoPayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig}}}}})
}

func marshalBundle(t testing.TB, b *protobundle.Bundle) []byte {
	t.Helper()
	out, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawManifest is a manifest pushed as it is.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// AttachBundle pushes bundle as an OCI 1.1 referrer of ref (artifact type and layer
// media type application/vnd.dev.sigstore.bundle.v0.3+json, an empty config), as cosign
// v3 attaches it.
func AttachBundle(t testing.TB, ref name.Digest, bundle []byte, opts ...remote.Option) {
	t.Helper()
	subject, err := remote.Head(ref, opts...)
	if err != nil {
		t.Fatalf("signing: reading %s: %v", ref, err)
	}
	empty := static.NewLayer([]byte("{}"), emptyJSONMediaType)
	layer := static.NewLayer(bundle, bundleMediaType)
	var descs []v1.Descriptor
	for _, l := range []v1.Layer{empty, layer} {
		if err := remote.WriteLayer(ref.Context(), l, opts...); err != nil {
			t.Fatalf("signing: pushing a blob: %v", err)
		}
		d, _ := l.Digest()
		size, _ := l.Size()
		mt, _ := l.MediaType()
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: size})
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: bundleMediaType, Config: descs[0],
		Layers: []v1.Descriptor{descs[1]}, Subject: &v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
		Annotations: map[string]string{"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": cosignSignPredicate}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(ref.Context().Digest(h.String()), rawManifest(raw), opts...); err != nil {
		t.Fatalf("signing: pushing the bundle of %s: %v", ref, err)
	}
}

// Attestation is an in-toto statement about digest of another predicate type than
// cosign's signature (an SBOM's).
func Attestation(t testing.TB, repository, digest string) []byte {
	t.Helper()
	return statement(t, repository, digest, "https://spdx.dev/Document")
}

// CosignClassic pushes a keyless signature of digest (normally ref's own) under ref's
// `sha256-<hex>.sig` tag, as `cosign sign` wrote them before v3: the simple-signing
// payload, its signature, the leaf certificate and the Rekor bundle (the entry and the
// log's signed entry timestamp) as the layer's annotations.
func (s *Sigstore) CosignClassic(t testing.TB, ref name.Digest, digest, subject, issuer string, opts ...remote.Option) {
	t.Helper()
	payload := fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`,
		ref.Context().Name(), digest)
	e, err := s.vs.Sign(subject, issuer, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil || len(entries) != 1 {
		t.Fatalf("signing: the log entry: %v", err)
	}
	tle := entries[0].TransparencyLogEntry()
	rp := tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
		LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId)}
	set, err := s.vs.RekorSignPayload(rp)
	if err != nil {
		t.Fatal(err)
	}
	rekorBundle, err := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": rp})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: static.NewLayer([]byte(payload), "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: map[string]string{
			"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sc.MessageSignatureContent().Signature()),
			"dev.sigstore.cosign/certificate":    string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: vc.Certificate().Raw})),
			"dev.sigstore.cosign/bundle":         string(rekorBundle),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tag := ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig")
	if err := remote.Write(tag, img, opts...); err != nil {
		t.Fatalf("signing: pushing the keyless signature of %s: %v", ref, err)
	}
}
