// Package render is the one way from an Application to its objects: a Helm chart,
// kustomize or plain YAML at its source, then namespace defaulting, with the main set
// split from the hooks by MainSet. The sync, the restart restore, the ownership
// hand-off, `gitsync diff|build` and the web UI all call Render; what it takes from the
// cluster is one injected *Cluster, and a nil one renders offline (and says so).
package render

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/build"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/phase"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// Cluster is what a render takes from the cluster, for one Application. Any field may
// be nil: that part is then offline.
type Cluster struct {
	// Discovery gives a chart the cluster's Capabilities (KubeVersion, APIVersions);
	// Helm's defaults without it.
	Discovery discovery.DiscoveryInterface
	// Values reads a spec.helm.valuesFrom reference with the Application's identity
	// (nil, nil when optional and missing); without it valuesFrom is an error.
	Values func(context.Context, gitsyncv1.ValuesReference) (map[string]any, error)
	// Lookup serves Helm's lookup with the Application's identity; without it lookup
	// finds nothing.
	Lookup engine.ClientProvider
	// Dependencies adds the dependencies a chart does not vendor (from the
	// HelmRepositories of the Application's namespace).
	Dependencies func(context.Context, *chart.Chart) error
	// IsNamespaced tells the scope of a kind the render does not define itself; the
	// built-in kinds' scopes (any other kind namespaced) without it.
	IsNamespaced func(schema.GroupKind) (bool, error)
	// Keys reads the keys of spec.decryption.secretRef (a Secret of the Application's
	// namespace, see ReadKeys) with the Application's identity; without it an
	// encrypted file or document fails the render, unless Source.KeepEncrypted.
	Keys func(ctx context.Context, secret string) (decrypt.KeySource, error)
	// Variables reads one spec.postBuild.substituteFrom reference (see
	// ReadSubstituteFrom) with the Application's identity; without it substituteFrom
	// is an error and only spec.postBuild.substitute renders.
	Variables func(context.Context, gitsyncv1.SubstituteReference) (*substitute.Source, error)
}

// Source is where the Application's files are: a directory (a checkout, or a local
// directory the build is confined to) with the path to render in it, or a chart archive
// from a HelmRepository.
type Source struct {
	// Root is the directory the render is confined to; Path is relative to it
	// (spec.path, "./" when empty).
	Root, Path string
	// Archive is a chart archive (.tgz) of a HelmRepository, in place of Root and Path.
	Archive string
	// KeepEncrypted renders without decrypting (a preview that may not read the keys):
	// SOPS-encrypted files and documents are left as they are and Result.Encrypted
	// names them.
	KeepEncrypted bool
	// ValuesRoots are the checkouts of the sources of spec.helm.valuesFilesFrom, by
	// ValuesSourceReference.Key; each file is read confined to its checkout.
	ValuesRoots map[string]string
}

// Result is what an Application renders to.
type Result struct {
	// Objects are every object rendered, hooks included (see MainSet), with namespaced
	// objects that name no namespace in spec.targetNamespace or the Application's.
	Objects []*unstructured.Unstructured
	// Chart names the chart, when a chart rendered.
	Chart Chart
	// Offline tells that the render had no cluster: a chart saw Helm's default
	// Capabilities and lookup found nothing.
	Offline bool
	// Encrypted names the files and objects left SOPS-encrypted (Source.KeepEncrypted).
	Encrypted []string
	// Sensitive are the values to mask wherever Objects are shown: plain values of
	// decrypted files and of decrypted documents other than Secrets (whose data are
	// masked as a whole), and variables substituted from Secrets; values shorter than
	// 6 bytes are left out.
	Sensitive []string
}

// Chart names a rendered chart and the CRDs of its crds/ folders, which spec.helm.crds
// governs.
type Chart struct {
	Name, Version string
	// CRDs holds the inventory IDs of the chart's crds/ CRDs, whatever the policy: Git
	// describes them, so a sync never prunes them, also when the policy leaves them out
	// of what it applies (Skip: never touched; Create: never updated).
	CRDs map[string]bool
	// CreateOnly: the CRDs are created when missing and never updated (crds: Create, the
	// default, as helm install does); they are not watched for drift either.
	CreateOnly bool
}

// ValuesError is a valuesFrom reference that cannot be read: the revision stalls with
// reason ValuesNotFound.
type ValuesError struct{ Err error }

func (e *ValuesError) Error() string { return e.Err.Error() }
func (e *ValuesError) Unwrap() error { return e.Err }

// RetryableError is a render failure that may pass by itself (a repository that has no
// index yet or did not answer): the sync is retried with backoff instead of stalling.
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string { return e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// IsValuesError and IsRetryable classify a Render error.
func IsValuesError(err error) bool { var v *ValuesError; return errors.As(err, &v) }
func IsRetryable(err error) bool   { var r *RetryableError; return errors.As(err, &r) }

// Render renders app from src: a chart when src is an archive or its path holds a
// Chart.yaml, kustomize or plain YAML otherwise — SOPS-encrypted files decrypted as the
// render reads them (spec.decryption) —, then post-processes the objects (postProcess:
// decryption, spec.postBuild substitution, spec.patches, spec.images,
// spec.commonMetadata); then namespaced objects that name no namespace go to
// app.DefaultNamespace(). cluster may be nil (offline).
func Render(ctx context.Context, app *gitsyncv1.Application, src Source, cluster *Cluster) (*Result, error) {
	c := cluster
	if c == nil {
		c = &Cluster{}
	}
	out := &Result{Offline: cluster == nil}
	dec, err := newDecryption(ctx, app, c, src.KeepEncrypted)
	if err != nil {
		return nil, err
	}
	var filter build.Filter
	if dec != nil {
		filter = dec.file
	}
	switch {
	case src.Archive != "":
		out.Objects, out.Chart, err = renderChart(ctx, app, archiveChart(src.Archive).from(src.ValuesRoots), c, filter)
	case helm.IsChart(filepath.Join(src.Root, pathOr(src.Path))):
		out.Objects, out.Chart, err = renderChart(ctx, app, dirChart(src.Root, filepath.Join(src.Root, pathOr(src.Path))).from(src.ValuesRoots), c, filter)
	default:
		out.Objects, err = build.BuildWith(src.Root, pathOr(src.Path), build.Options{Filter: filter})
	}
	if err != nil {
		return nil, err
	}
	if out.Objects, err = postProcess(ctx, app, out.Objects, dec, c, out); err != nil {
		return nil, err
	}
	scope := c.IsNamespaced
	if scope == nil {
		scope = BuiltinScope
	}
	if err := build.SetDefaultNamespace(out.Objects, app.DefaultNamespace(), scope); err != nil {
		return nil, err
	}
	return out, nil
}

func pathOr(p string) string {
	if p == "" {
		return "./"
	}
	return p
}

// MainSet returns the objects a sync applies and keeps in its inventory: the render
// without its hooks and skipped objects.
func MainSet(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	plan, err := phase.New(objs)
	if err != nil {
		return nil, err
	}
	return plan.Objects(), nil
}

// clusterScoped are the built-in cluster-scoped kinds, for rendering without a cluster.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                    true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                              true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                    true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                           true,
}

// BuiltinScope tells a kind's scope without a cluster: the built-in cluster-scoped kinds
// are, any other kind is taken as namespaced.
func BuiltinScope(gk schema.GroupKind) (bool, error) { return !clusterScoped[gk], nil }

// errNoValues is valuesFrom in an offline render.
func errNoValues(ref gitsyncv1.ValuesReference) error {
	return fmt.Errorf("spec.helm.valuesFrom %s %s is read from the cluster: render it with a cluster", ref.Kind, ref.Name)
}
