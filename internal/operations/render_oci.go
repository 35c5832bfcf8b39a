package operations

import (
	"context"
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/oci"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// renderOCI pulls the current artifact of the Application's OCIRepository (by its
// digest, with the repository's credentials) into a temporary directory and renders the
// Application's path from it. revision, when set, must be that artifact's.
func renderOCI(ctx context.Context, c client.Client, app *gitsyncv1.Application, revision string, cluster *render.Cluster, decrypt bool,
	roots map[string]string) (*Rendered, error) {
	key := sourceid.Key(app)
	repo := &gitsyncv1.OCIRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return nil, fmt.Errorf("reading source OCIRepository %s: %w", key, err)
	}
	art := repo.Status.Artifact
	if art == nil {
		return nil, fmt.Errorf("source OCIRepository %s has no artifact yet", key)
	}
	if revision != "" && revision != art.Revision {
		return nil, fmt.Errorf("revision %q: an OCIRepository renders at its current artifact (%s)", revision, art.Revision)
	}
	if repo.Spec.Verify != nil && art.Signer == "" {
		// The controller verified nothing of it (yet): the artifact pulled below by its
		// digest is the one verified when a signer is recorded.
		return nil, fmt.Errorf("source OCIRepository %s: artifact %s is not verified", key, art.Revision)
	}
	request, err := sourceid.OCIRequest(ctx, c, repo)
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of %s: %w", key, err)
	}
	request.Ref, request.Current = oci.Ref{Digest: art.Digest}, ""
	tmp, err := os.MkdirTemp("", "gitsync-cli-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	puller, err := oci.New(tmp, oci.Options{})
	if err != nil {
		return nil, err
	}
	pulled, err := puller.Pull(ctx, request)
	if err != nil {
		return nil, fmt.Errorf("pulling %s of %s: %w", art.Revision, key, err)
	}
	res, err := render.Render(ctx, app, render.Source{Root: pulled.Dir, Path: app.Spec.Path, KeepEncrypted: !decrypt, ValuesRoots: roots}, cluster)
	if err != nil {
		return nil, fmt.Errorf("building %s at %s: %w", PathOrDot(app.Spec.Path), art.Revision, err)
	}
	r := NewRendered(res, "revision "+art.Revision)
	r.Revision = art.Revision
	return r, nil
}
