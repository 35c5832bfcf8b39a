package application

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/attest"
)

// AttestationKeys gives the key that signs an Application's sync attestations (a nil
// key: its syncs are not attested).
type AttestationKeys interface {
	KeyFor(ctx context.Context, app client.Object) (*attest.Key, error)
}

// reconcileAttestation signs an attestation of a successful sync that goes into history
// (a new revision, or one that changed something): an in-toto statement of the objects
// as the API server holds them now (read with the operator's identity) in a DSSE
// envelope, kept in the Application's attestations ConfigMap, its digest in the history
// entry (see finish). The ConfigMap is written with the identity the sync applied with:
// the operator's own, or in tenant mode the Application's service account, since the
// operator's least-privilege role writes nothing but gitsync's kinds and events. Either
// way, whoever may write ConfigMaps there could change it: `gitsync verify` trusts only
// the signature and the digest in status (which only the operator writes). A failure is a Warning event
// (AttestationFailed) and a history entry without attestation: the sync stands. It sets
// no condition.
func (r *Reconciler) reconcileAttestation(ctx context.Context, s *syncRun) outcome {
	if r.Attestations == nil || !s.entersHistory() {
		return done()
	}
	key, err := r.Attestations.KeyFor(ctx, s.app)
	if key == nil && err == nil {
		return done()
	}
	digest := ""
	if err == nil {
		digest, err = r.attest(ctx, s, key)
	}
	if err != nil {
		r.Recorder.Eventf(s.app, nil, corev1.EventTypeWarning, gitsyncv1.AttestationFailedReason, "Attest",
			"revision %s was applied, but not attested: %v", s.revision, err)
		s.log.Error(err, "attesting the sync", "revision", s.revision)
		return done()
	}
	s.attestation = digest
	return done()
}

// entersHistory tells whether a successful run gets a history entry (finish's rule: a
// new revision, or a sync that changed something).
func (s *syncRun) entersHistory() bool {
	if !s.attempted || s.result == nil {
		return false
	}
	changed := s.result.Count(apply.CreatedAction)+s.result.Count(apply.ConfiguredAction)+len(s.pruned) > 0
	h := s.app.Status.History
	return changed || len(h) == 0 || h[0].Revision != s.revision
}

func (r *Reconciler) attest(ctx context.Context, s *syncRun, key *attest.Key) (string, error) {
	app := s.app
	sync := attest.Sync{
		Application: attest.Ref{Namespace: app.Namespace, Name: app.Name},
		Revision:    s.revision,
		Signer:      s.signer, // the source's verified signer, if it verifies (every source's, joined)
		SyncedAt:    r.now(),
	}
	if app.MultiSource() {
		sync.Sources = attestedSources(s)
	} else {
		sync.Source = sourceRefOf(app, app.Spec.SourceRef)
	}
	if s.chart != "" {
		sync.Chart = &attest.Chart{Name: s.chart, Version: s.chartVersion, ValuesDigest: valuesDigest(chartSpec(s))}
	}
	for _, e := range inventoryEntries(app) {
		gvk, err := e.GroupVersionKind()
		if err != nil {
			return "", err
		}
		m, err := e.ObjMetadata()
		if err != nil {
			return "", err
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		// Read where the sync applied it (another cluster's API server with spec.cluster),
		// as the identity that applied it.
		if err := s.manager.Client().Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, obj); err != nil {
			return "", fmt.Errorf("reading %s: %w", e.Subject(), err)
		}
		rec, err := attest.Record(obj)
		if err != nil {
			return "", err
		}
		sync.Objects = append(sync.Objects, rec)
	}
	envelope, digest, err := attest.Make(ctx, key, sync)
	if err != nil {
		return "", err
	}
	// Owned by the Application (not its controller): deleted with it.
	owner := metav1.OwnerReference{APIVersion: gitsyncv1.GroupVersion.String(), Kind: gitsyncv1.ApplicationKind, Name: app.Name, UID: app.UID}
	// The record lives beside the Application (its owner), in this cluster, also when the
	// objects are on another one.
	store, err := r.localApplier(app)
	if err != nil {
		return "", err
	}
	if err := attest.Write(ctx, store.Client(), store.Client(), app, owner, envelope); err != nil {
		return "", err
	}
	return digest, nil
}

// sourceRefOf names a source of app as an attestation does (its namespace defaults to
// the Application's).
func sourceRefOf(app *gitsyncv1.Application, ref gitsyncv1.SourceReference) attest.SourceRef {
	out := attest.SourceRef{Kind: ref.Kind, Namespace: app.Namespace, Name: ref.Name}
	if ref.Namespace != "" {
		out.Namespace = ref.Namespace
	}
	return out
}

// attestedSources are the sources of a sync of spec.sources, in their order: each with
// its path, the revision of it the sync rendered and its verified signer.
func attestedSources(s *syncRun) []attest.Source {
	app := s.app
	out := make([]attest.Source, 0, len(app.Spec.Sources))
	for i, src := range app.Spec.Sources {
		a := attest.Source{SourceRef: sourceRefOf(app, src.SourceRef), Path: src.Path, Revision: app.RevisionOf(i, s.revision)}
		if len(s.parts) == len(app.Spec.Sources) {
			a.Revision, a.Signer = s.parts[i].revision, s.parts[i].signer
		}
		out = append(out, a)
	}
	return out
}

// chartSpec is the Application whose spec.helm rendered the sync's chart: the
// Application itself, or with spec.sources the first source with a helm spec.
func chartSpec(s *syncRun) *gitsyncv1.Application {
	for _, p := range s.parts {
		if p.app.Spec.Helm != nil {
			return p.app
		}
	}
	return s.app
}

// valuesDigest is the sha256 of the Application's values specification: inline values,
// valuesFiles (their content is the revision's) and valuesFrom references.
func valuesDigest(app *gitsyncv1.Application) string {
	h := app.Spec.Helm
	if h == nil {
		return ""
	}
	b, err := json.Marshal(struct {
		Values      any                         `json:"values,omitempty"`
		ValuesFiles []string                    `json:"valuesFiles,omitempty"`
		ValuesFrom  []gitsyncv1.ValuesReference `json:"valuesFrom,omitempty"`
	}{h.Values, h.ValuesFiles, h.ValuesFrom})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
