package sources

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

// gitVerifyKeys reads the keys spec.verify.secretRef names (nil, "" and nil without
// spec.verify; CheckGitRepository checked the tenant's access to it). A Secret that
// cannot be read gives SecretNotFound; keys that cannot be parsed give
// VerificationFailed. Error texts name the Secret, never its values.
func (r *GitRepositoryReconciler) gitVerifyKeys(ctx context.Context, obj *gitsyncv1.GitRepository) (*verify.GitKeys, string, error) {
	v := obj.Spec.Verify
	if v == nil {
		return nil, "", nil
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: v.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		return nil, gitsyncv1.SecretNotFoundReason, fmt.Errorf("reading verification secret %s: %w", key, err)
	}
	keys, err := verify.ParseGitKeys(secret.Data)
	if err != nil {
		return nil, gitsyncv1.VerificationFailedReason, fmt.Errorf("verification secret %s: %w", key, err)
	}
	return keys, "", nil
}

// verifyGit checks the artifact's signatures as spec.verify.mode says and returns its
// signers joined for status.artifact.signer. The error names the revision and why.
func verifyGit(obj *gitsyncv1.GitRepository, a *source.Artifact, keys *verify.GitKeys) (string, error) {
	if a.Signed == nil {
		return "", fmt.Errorf("verifying %s: its signed objects were not fetched", a.Revision)
	}
	mode := verify.Mode(obj.Spec.Verify.Mode)
	if mode == "" {
		mode = verify.ModeHEAD
	}
	signers, err := verify.Git(verify.GitObjects{
		CommitID: a.Signed.CommitID, Commit: a.Signed.Commit, TagID: a.Signed.TagID, Tag: a.Signed.Tag,
	}, mode, keys)
	if err != nil {
		return "", fmt.Errorf("verifying %s (mode %s): %w", a.Revision, mode, err)
	}
	if len(signers) == 0 {
		return "", errors.New("verifying " + a.Revision + ": no signer")
	}
	return verify.Join(signers), nil
}
