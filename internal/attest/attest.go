package attest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"time"
)

// Sync is what one successful sync hands to Make.
type Sync struct {
	Application Ref
	Source      SourceRef
	// Sources are set, and Source is not, for an Application of spec.sources.
	Sources  []Source
	Revision string
	Signer   string
	Chart    *Chart
	SyncedAt time.Time
	// Objects are the applied objects' records (Record).
	Objects []Object
}

// Make builds and signs the attestation of a sync. When the envelope with every field
// would be over MaxEnvelope compressed, the fields are withheld (each subject's digest
// still covers them); still over, it fails.
func Make(ctx context.Context, key *Key, s Sync) (envelope []byte, digest string, err error) {
	p := Predicate{Application: s.Application, Source: s.Source, Sources: s.Sources, Revision: s.Revision, Signer: s.Signer,
		Chart: s.Chart, SyncedAt: s.SyncedAt.UTC().Truncate(time.Second), Objects: s.Objects}
	envelope, digest, err = signPredicate(ctx, key, p)
	if err != nil {
		return nil, "", err
	}
	if compressedSize(envelope) <= MaxEnvelope {
		return envelope, digest, nil
	}
	// Subjects are computed from the fields before they are dropped.
	st, err := statementWithheld(p)
	if err != nil {
		return nil, "", err
	}
	envelope, digest, err = Sign(ctx, key, st)
	if err != nil {
		return nil, "", err
	}
	if n := compressedSize(envelope); n > MaxEnvelope {
		return nil, "", fmt.Errorf("the attestation of %d objects is %d bytes compressed, over the bound of %d", len(s.Objects), n, MaxEnvelope)
	}
	return envelope, digest, nil
}

func signPredicate(ctx context.Context, key *Key, p Predicate) ([]byte, string, error) {
	st, err := Statement(p)
	if err != nil {
		return nil, "", err
	}
	return Sign(ctx, key, st)
}

// compressedSize is how many bytes b takes in the ConfigMap (see Add).
func compressedSize(b []byte) int {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // writes to memory cannot fail
	_ = zw.Close()
	return buf.Len()
}
