package application

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// reconcileOCISource finds an OCIRepository's artifact and its unpacked directory, which
// the build renders like a Git checkout (kustomize, YAML, a chart at spec.path). Without
// an artifact, or while its directory is not in storage (the source is asked to pull it
// again): Ready=False/ArtifactNotReady, or the source's own failure passed through.
func (r *Reconciler) reconcileOCISource(ctx context.Context, s *syncRun) outcome {
	app := s.app
	key := sourceid.Key(app)
	if app.Spec.PinnedRevision != "" {
		return waitFor(0, gitsyncv1.ArtifactNotReadyReason, "spec.pinnedRevision is for GitRepository sources: pin an OCIRepository with spec.ref.digest")
	}
	repo := &gitsyncv1.OCIRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		msg := fmt.Sprintf("reading source %s: %v", key, err)
		if apierrors.IsNotFound(err) {
			msg = fmt.Sprintf("source OCIRepository %s does not exist", key)
		}
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, msg)
	}
	// A failing poll keeps the artifact before it (verified, with spec.verify): it stays
	// what the Application renders; without one, the source's failure is passed through.
	if reason, msg, failed := ociSourceFailure(repo); failed && repo.Status.Artifact == nil {
		return waitFor(r.retryInterval(), reason, msg)
	}
	artifact := repo.Status.Artifact
	if artifact == nil {
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("source OCIRepository %s has no artifact yet", key))
	}
	if repo.Spec.Verify != nil && artifact.Signer == "" {
		return waitFor(r.retryInterval(), gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("the artifact of OCIRepository %s is not verified yet", key))
	}
	s.revision = artifact.Revision
	if awaitingSyncRequest(s) {
		return waitFor(0, "", "")
	}
	s.signer = artifact.Signer
	if r.Artifacts == nil {
		return waitFor(0, gitsyncv1.ArtifactNotReadyReason, "this operator does not store OCI artifacts")
	}
	return r.useCheckout(ctx, s, repo, sourceid.OCICheckoutDir(r.Artifacts, repo, artifact.Digest),
		func(ctx context.Context) (string, error) { return r.pullArtifact(ctx, repo, artifact.Digest) },
		func() (string, string) {
			return gitsyncv1.ArtifactNotReadyReason, fmt.Sprintf("artifact %s is not in storage; asked %s to pull it", s.revision, key)
		})
}

// ociSourceFailure passes a failing OCIRepository's reason and message through.
func ociSourceFailure(repo *gitsyncv1.OCIRepository) (reason, msg string, failed bool) {
	ready := conditions.Get(repo, gitsyncv1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || repo.Status.ObservedGeneration != repo.Generation ||
		ready.Reason == gitsyncv1.ProgressingReason {
		return "", "", false
	}
	return ready.Reason, fmt.Sprintf("source OCIRepository %s/%s: %s", repo.Namespace, repo.Name, ready.Message), true
}

// ociCheckout is the stored directory of the OCIRepository artifact at revision
// (`<tag>@sha256:<hex>`; "": the OCIRepository's current artifact), for the restore and
// ownership checks: also an older artifact than the current one, which the artifact GC
// keeps while an Application's last applied revision names it; false when storage does
// not hold it.
func (r *Reconciler) ociCheckout(ctx context.Context, app *gitsyncv1.Application, revision string) (string, bool) {
	repo := &gitsyncv1.OCIRepository{}
	if r.Artifacts == nil || r.Get(ctx, sourceid.Key(app), repo) != nil {
		return "", false
	}
	digest := ""
	if i := strings.LastIndex(revision, "sha256:"); i >= 0 {
		digest = revision[i:]
	} else if revision == "" && repo.Status.Artifact != nil {
		digest = repo.Status.Artifact.Digest
	}
	if digest == "" {
		return "", false
	}
	dir := sourceid.OCICheckoutDir(r.Artifacts, repo, digest)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	return dir, true
}

// ociPuller is what the Artifacts of the operator (an oci.Client) also do: pull.
type ociPuller interface {
	Pull(ctx context.Context, req oci.Request) (*oci.Artifact, error)
}

// secretChecker is the tenant-mode check of the operator's SecretAccess.
type secretChecker interface {
	Check(ctx context.Context, namespace string, names ...string) error
}

// pullArtifact pulls the artifact of digest from repo into this replica's storage (its
// owner pulled it on its own disk), with repo's credentials once tenant mode allows
// reading them, within the operator's caps.
func (r *Reconciler) pullArtifact(ctx context.Context, repo *gitsyncv1.OCIRepository, digest string) (string, error) {
	puller, ok := r.Artifacts.(ociPuller)
	if !ok {
		return "", fmt.Errorf("artifact %s is not in storage", digest)
	}
	if repo.Spec.SecretRef != nil && r.SecretAccess != nil {
		checker, ok := r.SecretAccess.(secretChecker)
		if !ok {
			return "", fmt.Errorf("cannot check access to Secret %s", repo.Spec.SecretRef.Name)
		}
		if err := checker.Check(ctx, repo.Namespace, repo.Spec.SecretRef.Name); err != nil {
			return "", err
		}
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	request, err := sourceid.OCIRequest(ctx, reader, repo)
	if err != nil {
		return "", fmt.Errorf("pulling %s: %w", digest, err)
	}
	request.Ref, request.Current = oci.Ref{Digest: digest}, ""
	request.MaxSize = oci.DefaultMaxSize
	if m := r.Caps.MaxArtifactSize; m > 0 && m < request.MaxSize {
		request.MaxSize = m
	}
	request.Timeout, _ = r.Caps.Timeout("", request.Timeout)
	art, err := puller.Pull(ctx, request)
	if err != nil {
		return "", fmt.Errorf("pulling %s of %s: %w", digest, client.ObjectKeyFromObject(repo), err)
	}
	return art.Dir, nil
}
