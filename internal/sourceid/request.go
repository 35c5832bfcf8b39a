package sourceid

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/chartrepo"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// GitRequest is the fetch of ref from a GitRepository: its URL, spec.ignore, timeout and
// the credentials of spec.secretRef, read through reader (uncached where it matters).
// The one builder of a fetch request: the source controller, a pinned revision and the
// CLI all use it. Error texts name the Secret, never its values.
func GitRequest(ctx context.Context, reader client.Reader, repo *gitsyncv1.GitRepository, ref source.Ref) (source.Request, error) {
	req := source.Request{URL: repo.Spec.URL, Ref: ref, Ignore: IgnoreLines(repo.Spec.Ignore), Timeout: repo.GetTimeout().Duration,
		Key: RepositoryKey(repo)}
	if repo.Spec.SecretRef == nil {
		return req, nil
	}
	key := types.NamespacedName{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return req, fmt.Errorf("reading secret %s: %w", key, err)
	}
	auth, err := source.AuthFromSecret(secret.Data)
	if err != nil {
		return req, fmt.Errorf("secret %s: %w", key, err)
	}
	req.Auth = auth
	return req, nil
}

// HelmSource reads a HelmRepository's URL, timeout and spec.secretRef (username,
// password, ca.crt) through reader. Error texts name the Secret, never its values.
func HelmSource(ctx context.Context, reader client.Reader, obj *gitsyncv1.HelmRepository) (chartrepo.Source, error) {
	src := chartrepo.Source{URL: obj.Spec.URL, Timeout: obj.GetTimeout().Duration, Key: ChartKey(obj)}
	if obj.Spec.SecretRef == nil {
		return src, nil
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return src, fmt.Errorf("reading secret %s: %w", key, err)
	}
	src.Username, src.Password, src.CA = string(secret.Data["username"]), string(secret.Data["password"]), secret.Data["ca.crt"]
	if (src.Username == "") != (src.Password == "") {
		return src, fmt.Errorf("secret %s: username and password go together", key)
	}
	return src, nil
}

// ReadIndex polls repo into store with the credentials read through reader, without a
// previous index (for oci://, the tags of chart), and returns the index's digest and
// the source it polled.
func ReadIndex(ctx context.Context, store *chartrepo.Store, reader client.Reader, repo *gitsyncv1.HelmRepository, chart string) (string, chartrepo.Source, error) {
	src, err := HelmSource(ctx, reader, repo)
	if err != nil {
		return "", src, err
	}
	poll, err := store.Poll(ctx, src, "", []string{chart})
	return poll.Digest, src, err
}
