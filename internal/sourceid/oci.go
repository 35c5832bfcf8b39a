package sourceid

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/oci"
)

// OCIKey is the identity an OCIRepository's artifacts are stored under: its URL and its
// credentials (spec.secretRef's namespace and name). Another tenant's OCIRepository that
// names the same digest has another key, so it never reads this one's artifact.
func OCIKey(repo *gitsyncv1.OCIRepository) string {
	return repo.Spec.URL + "\x00" + credentials(repo.Namespace, repo.Spec.SecretRef)
}

// OCIArtifacts is where pulled artifacts are stored (an oci.Client).
type OCIArtifacts interface {
	ArtifactDir(key, digest, mediaType, operation string) string
}

// OCICheckoutDir is where the artifact of digest pulled for repo is stored (it may not
// exist: never pulled, or removed); "" without a digest. Applications render it like a
// Git checkout.
func OCICheckoutDir(store OCIArtifacts, repo *gitsyncv1.OCIRepository, digest string) string {
	if digest == "" {
		return ""
	}
	return store.ArtifactDir(OCIKey(repo), digest, repo.LayerMediaType(), repo.LayerOperation())
}

// OCIRequest is the pull of an OCIRepository's ref: its URL, ref, layer selection,
// timeout and the credentials of spec.secretRef (a dockerconfigjson Secret), read through
// reader. Error texts name the Secret, never its values.
func OCIRequest(ctx context.Context, reader client.Reader, repo *gitsyncv1.OCIRepository) (oci.Request, error) {
	req := oci.Request{URL: repo.Spec.URL, Insecure: repo.Spec.Insecure, Timeout: repo.GetTimeout().Duration,
		MediaType: repo.LayerMediaType(), Operation: repo.LayerOperation(), Key: OCIKey(repo)}
	if r := repo.Spec.Ref; r != nil {
		req.Ref = oci.Ref{Tag: r.Tag, SemVer: r.SemVer, Digest: r.Digest}
	}
	if a := repo.Status.Artifact; a != nil {
		req.Current = a.Digest
	}
	if repo.Spec.SecretRef == nil {
		return req, nil
	}
	registry, err := oci.Repository(repo.Spec.URL, repo.Spec.Insecure)
	if err != nil {
		return req, err
	}
	key := types.NamespacedName{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, key, secret); err != nil {
		return req, fmt.Errorf("reading secret %s: %w", key, err)
	}
	auth, err := oci.AuthFromDockerConfig(secret.Data[oci.DockerConfigKey], registry.RegistryStr())
	if err != nil {
		return req, fmt.Errorf("secret %s: %w", key, err)
	}
	req.Auth = auth
	return req, nil
}
