package kit

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"

	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// ApplicationSourceIndex indexes Applications by "<namespace>/<name>" of their GitRepository
// (HelmSourceIndexKey for a HelmRepository).
const ApplicationSourceIndex = ".spec.sourceRef"

// SourceIndexKey is the ApplicationSourceIndex value of the Application's source
// (spec.sourceRef; SourceIndexKeys for every source of spec.sources).
func SourceIndexKey(app *gitsyncv1.Application) string {
	switch app.Spec.SourceRef.Kind {
	case gitsyncv1.HelmRepositoryKind:
		return HelmSourceIndexKey(sourceid.Key(app))
	case gitsyncv1.OCIRepositoryKind:
		return OCISourceIndexKey(sourceid.Key(app))
	}
	return sourceid.Key(app).String()
}

// SourceIndexKeys are the ApplicationSourceIndex values of every source the Application
// renders (SourceList), each once: a new artifact of any of them wakes it.
func SourceIndexKeys(app *gitsyncv1.Application) []string {
	var keys []string
	for i := range app.SourceList() {
		key := SourceIndexKey(app.ForSource(i))
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// OCISourceIndexKey is the ApplicationSourceIndex value of an OCIRepository.
func OCISourceIndexKey(key types.NamespacedName) string {
	return gitsyncv1.OCIRepositoryKind + ":" + key.String()
}

// HelmSourceIndexKey is the ApplicationSourceIndex value of a HelmRepository (a
// GitRepository's is "<namespace>/<name>").
func HelmSourceIndexKey(key types.NamespacedName) string {
	return gitsyncv1.HelmRepositoryKind + ":" + key.String()
}

// ArtifactOf is a source's status.artifact (nil for other objects).
func ArtifactOf(o client.Object) *gitsyncv1.Artifact {
	switch src := o.(type) {
	case *gitsyncv1.GitRepository:
		return src.Status.Artifact
	case *gitsyncv1.HelmRepository:
		return src.Status.Artifact
	case *gitsyncv1.OCIRepository:
		if a := src.Status.Artifact; a != nil {
			return &gitsyncv1.Artifact{Revision: a.Revision, Digest: a.Digest, LastUpdateTime: a.LastUpdateTime}
		}
	}
	return nil
}

// CurrentArtifact turns status.artifact back into what the fetcher compares against.
func CurrentArtifact(obj *gitsyncv1.GitRepository) *source.Artifact {
	a := obj.Status.Artifact
	if a == nil {
		return nil
	}
	commit := source.CommitOf(a.Revision)
	if commit == "" {
		return nil
	}
	return &source.Artifact{Revision: a.Revision, Commit: commit, Digest: a.Digest}
}
