package operations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/attest"
)

// ErrRefused is returned (wrapped) when an Application's attestation is not to be
// trusted: not signed by the trusted key, or signed for another Application or revision
// than its history says.
var ErrRefused = errors.New("attestation refused")

// VerifyOptions says which public key to trust: PublicKey (PEM, `--key FILE`), else
// the cosign.pub of KeySecret (`--key-secret NS/NAME`).
type VerifyOptions struct {
	PublicKey []byte
	KeySecret types.NamespacedName
}

// Verification is what `gitsync verify app` found: the attestation checked and the
// attested objects that no longer hold what was attested.
type Verification struct {
	Application types.NamespacedName
	Digest      string
	Revision    string
	Signer      string
	SyncedAt    time.Time
	KeyID       string
	Objects     int
	// Sources are the attested sources of an Application of spec.sources, each with its
	// revision and verified signer.
	Sources []attest.Source
	// Unattested is the newest sync's revision when it has no attestation (an older
	// one was verified).
	Unattested string
	Drifted    []attest.Drifted
}

// OK tells whether every attested object still holds what was attested.
func (v *Verification) OK() bool { return len(v.Drifted) == 0 }

// VerifyApp loads the newest attestation in the Application's history from its
// ConfigMap, checks its signature with the trusted key (nothing in the ConfigMap is
// trusted before that), that it attests this Application at that revision, and that
// each attested object in the cluster still holds the attested fields (on the
// Application's Cluster when spec.cluster names one).
func VerifyApp(ctx context.Context, c client.Client, key types.NamespacedName, opts VerifyOptions) (*Verification, error) {
	pub, err := trustedKey(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	app, err := GetApp(ctx, c, key)
	if err != nil {
		return nil, err
	}
	v := &Verification{Application: key}
	var entry *gitsyncv1.SyncHistoryEntry
	for i := range app.Status.History {
		if h := &app.Status.History[i]; h.Attestation != "" {
			entry = h
			break
		}
		if i == 0 && app.Status.History[0].Result == gitsyncv1.SyncResultSucceeded {
			v.Unattested = app.Status.History[0].Revision
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("application %s has no attested sync in its history (is the operator run with --attestation-key-secret?)", key)
	}
	v.Digest = entry.Attestation
	cm := &corev1.ConfigMap{}
	cmKey := types.NamespacedName{Namespace: key.Namespace, Name: attest.ConfigMapName(key.Name)}
	if err := c.Get(ctx, cmKey, cm); err != nil {
		return nil, fmt.Errorf("reading the attestations of %s (ConfigMap %s): %w", key, cmKey.Name, err)
	}
	envelope, err := attest.Find(cm, entry.Attestation)
	if errors.Is(err, attest.ErrNotFound) {
		// The newest attested sync's envelope is always kept: its absence means the
		// ConfigMap was changed by someone else than gitsync.
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if err != nil {
		return nil, err
	}
	parsed, err := attest.Verify(ctx, pub, envelope)
	if err != nil {
		if errors.Is(err, attest.ErrForged) {
			return nil, fmt.Errorf("%w: %v", ErrRefused, err)
		}
		return nil, err
	}
	p := parsed.Predicate
	if p.Application.Namespace != key.Namespace || p.Application.Name != key.Name || p.Revision != entry.Revision {
		return nil, fmt.Errorf("%w: it attests %s/%s at %s, not %s at %s", ErrRefused,
			p.Application.Namespace, p.Application.Name, p.Revision, key, entry.Revision)
	}
	v.Revision, v.Signer, v.SyncedAt, v.Objects, v.Sources = p.Revision, p.Signer, p.SyncedAt, len(p.Objects), p.Sources
	v.KeyID, _ = pub.KeyID()
	// The objects are where the Application syncs them (its Cluster's API server with
	// spec.cluster); the record and the key stay beside the Application.
	objects, _, err := OnItsCluster(ctx, c, app)
	if err != nil {
		return nil, err
	}
	for _, rec := range p.Objects {
		live, err := liveObject(ctx, objects, rec)
		if err != nil {
			return nil, err
		}
		d, err := attest.Compare(rec, parsed.Subjects[rec.ID()], live, p.FieldsWithheld)
		if err != nil {
			return nil, err
		}
		if d != nil {
			v.Drifted = append(v.Drifted, *d)
		}
	}
	return v, nil
}

// trustedKey reads the public key the options name.
func trustedKey(ctx context.Context, c client.Reader, opts VerifyOptions) (*attest.PublicKey, error) {
	if len(opts.PublicKey) > 0 {
		return attest.ParsePublicKey(opts.PublicKey)
	}
	if opts.KeySecret.Name == "" {
		return nil, errors.New("no public key to trust: give --key FILE or --key-secret NAMESPACE/NAME")
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, opts.KeySecret, s); err != nil {
		return nil, fmt.Errorf("reading the key Secret %s: %w", opts.KeySecret, err)
	}
	return attest.PublicKeyFromSecret(s)
}

// liveObject reads an attested object as it is now (nil when it is gone).
func liveObject(ctx context.Context, c client.Reader, rec attest.Object) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: rec.Group, Version: rec.Version, Kind: rec.Kind})
	err := c.Get(ctx, types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rec.ID(), err)
	}
	return obj, nil
}

// Report says what was verified and lists the drift, object by object and field by
// field with its writers.
func (v *Verification) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attestation %s of %s verified (key %s)\n", v.Digest, v.Application, v.KeyID)
	fmt.Fprintf(&b, "  revision %s, synced %s", v.Revision, v.SyncedAt.UTC().Format(time.RFC3339))
	if v.Signer != "" {
		fmt.Fprintf(&b, ", source signed by %s", v.Signer)
	}
	b.WriteString("\n")
	for _, src := range v.Sources {
		fmt.Fprintf(&b, "  source %s/%s/%s", src.Kind, src.Namespace, src.Name)
		if src.Path != "" {
			fmt.Fprintf(&b, " path %s", src.Path)
		}
		fmt.Fprintf(&b, " at %s", src.Revision)
		if src.Signer != "" {
			fmt.Fprintf(&b, ", signed by %s", src.Signer)
		}
		b.WriteString("\n")
	}
	if v.Unattested != "" {
		fmt.Fprintf(&b, "  note: the newest sync (%s) has no attestation; this is the newest attested one\n", v.Unattested)
	}
	if v.OK() {
		fmt.Fprintf(&b, "%d objects match the attestation\n", v.Objects)
		return b.String()
	}
	fmt.Fprintf(&b, "%d of %d objects changed since the attested sync:\n", len(v.Drifted), v.Objects)
	for _, d := range v.Drifted {
		switch {
		case d.Missing:
			fmt.Fprintf(&b, "  %s: missing\n", d.Object)
		case d.Unnamed:
			fmt.Fprintf(&b, "  %s: changed (the attestation withheld its fields: too large to name them)\n", d.Object)
		default:
			fmt.Fprintf(&b, "  %s:\n", d.Object)
			for _, f := range d.Fields {
				who := "unknown writer"
				if len(f.Managers) > 0 {
					who = "written by " + strings.Join(f.Managers, ", ")
				}
				fmt.Fprintf(&b, "    %s (%s)\n", f.Path, who)
			}
		}
	}
	return b.String()
}
