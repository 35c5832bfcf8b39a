package attest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Where attestations are kept: a ConfigMap per Application, in its namespace, holding
// its last Keep envelopes (gzip-compressed, in binaryData).
//
// Why a ConfigMap and not an OCI artifact beside the source: a sync must be attested
// whatever its source is (a Git repository has no registry beside it), without a
// registry gitsync could push to, credentials to push with, or a network hop that may
// fail after the apply; the record's lifetime follows the Application's (an owner
// reference deletes it with it), and `gitsync verify` reads it with the same kubeconfig
// as every other verb. A ConfigMap is bounded (1 MiB), hence Keep and MaxEnvelope; it is
// writable by whoever may write ConfigMaps in the namespace, which is why nothing in it
// is trusted before its signature is checked (Verify) and its digest matched against
// the Application's status.history.
const (
	// Keep is how many envelopes a ConfigMap holds (the newest).
	Keep = 3
	// MaxEnvelope bounds one compressed envelope; Keep of them fit a ConfigMap.
	MaxEnvelope = 256 << 10
	// maxUncompressed bounds what reading one envelope may inflate to.
	maxUncompressed = 16 << 20
	// AnnotationFor names the Application whose attestations a ConfigMap holds.
	AnnotationFor  = "gitsync.dev/attestations-of"
	envelopeSuffix = ".dsse.json.gz"
	namePrefix     = "gitsync-attestations-"
)

// ConfigMapName is the name of the ConfigMap that holds app's attestations.
func ConfigMapName(app string) string {
	name := namePrefix + app
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(app))
	return name[:253-17] + "-" + hex.EncodeToString(sum[:8])
}

// Add puts an envelope into cm (compressed, under the next sequence number) and drops
// the oldest beyond Keep. It fails when the compressed envelope is over MaxEnvelope.
func Add(cm *corev1.ConfigMap, envelope []byte) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(envelope); err != nil {
		return fmt.Errorf("compressing the envelope: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing the envelope: %w", err)
	}
	if buf.Len() > MaxEnvelope {
		return fmt.Errorf("the attestation is %d bytes compressed, over the bound of %d", buf.Len(), MaxEnvelope)
	}
	keys := sequence(cm)
	next := uint64(1)
	if len(keys) > 0 {
		next = keys[len(keys)-1].seq + 1
	}
	if cm.BinaryData == nil {
		cm.BinaryData = map[string][]byte{}
	}
	cm.BinaryData[fmt.Sprintf("%010d%s", next, envelopeSuffix)] = buf.Bytes()
	for len(keys) >= Keep {
		delete(cm.BinaryData, keys[0].key)
		keys = keys[1:]
	}
	return nil
}

type seqKey struct {
	seq uint64
	key string
}

// sequence returns cm's envelope keys, oldest first.
func sequence(cm *corev1.ConfigMap) []seqKey {
	var out []seqKey
	for k := range cm.BinaryData {
		n, ok := strings.CutSuffix(k, envelopeSuffix)
		if !ok {
			continue
		}
		if seq, err := strconv.ParseUint(n, 10, 64); err == nil {
			out = append(out, seqKey{seq, k})
		}
	}
	slices.SortFunc(out, func(a, b seqKey) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// Find returns the envelope of cm whose Digest is digest; the newest when digest is
// empty. Each is inflated at most to maxUncompressed.
func Find(cm *corev1.ConfigMap, digest string) ([]byte, error) {
	keys := sequence(cm)
	for i := len(keys) - 1; i >= 0; i-- {
		env, err := inflate(cm.BinaryData[keys[i].key])
		if err != nil {
			return nil, fmt.Errorf("reading %s of ConfigMap %s: %w", keys[i].key, cm.Name, err)
		}
		if digest == "" || Digest(env) == digest {
			return env, nil
		}
	}
	if digest == "" {
		return nil, fmt.Errorf("%w: ConfigMap %s/%s holds none", ErrNotFound, cm.Namespace, cm.Name)
	}
	return nil, fmt.Errorf("%w: ConfigMap %s/%s holds none with digest %s", ErrNotFound, cm.Namespace, cm.Name, digest)
}

// ErrNotFound is returned (wrapped) by Find when the envelope is not there.
var ErrNotFound = errors.New("attestation not found")

func inflate(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxUncompressed+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxUncompressed {
		return nil, fmt.Errorf("larger than %d bytes uncompressed", maxUncompressed)
	}
	return out, nil
}

// Write adds an envelope to the ConfigMap of app (created with an owner reference to
// app, so that it goes with it): read through r (uncached: the operator caches
// ConfigMaps as metadata only) and written through c, both the operator's own identity,
// since the record is gitsync's, not the tenant's.
func Write(ctx context.Context, r client.Reader, c client.Writer, app client.Object, owner metav1.OwnerReference, envelope []byte) error {
	key := types.NamespacedName{Namespace: app.GetNamespace(), Name: ConfigMapName(app.GetName())}
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, key, cm)
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Annotations:     map[string]string{AnnotationFor: app.GetName()},
			OwnerReferences: []metav1.OwnerReference{owner}}}
		if err := Add(cm, envelope); err != nil {
			return err
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	if err := Add(cm, envelope); err != nil {
		return err
	}
	if err := c.Update(ctx, cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", key, err)
	}
	return nil
}
