package render

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// postProcess runs the post-build steps over a render's objects, in order:
//  1. decryption (spec.decryption) of what the file filter did not already decrypt — a
//     SOPS document is refused without spec.decryption;
//  2. substitution (spec.postBuild);
//  3. spec.patches, spec.images and spec.commonMetadata.
//
// It fills out.Encrypted and out.Sensitive and returns the objects.
func postProcess(ctx context.Context, app *gitsyncv1.Application, objs []*unstructured.Unstructured, dec *decryption, cluster *Cluster, out *Result) ([]*unstructured.Unstructured, error) {
	if dec == nil {
		if err := refuseEncrypted(objs); err != nil {
			return nil, err
		}
	} else if err := dec.objects(objs); err != nil {
		return nil, err
	}
	secrets, err := substituteStep(ctx, app, objs, cluster)
	if err != nil {
		return nil, err
	}
	if objs, err = transformStep(app, objs); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, s := range secrets {
		if len(s) >= minSensitive {
			set[s] = true
		}
	}
	if dec != nil {
		dec.mu.Lock()
		for s := range dec.sensitive {
			set[s] = true
		}
		out.Encrypted = append([]string(nil), dec.encrypted...)
		dec.mu.Unlock()
		sort.Strings(out.Encrypted)
	}
	out.Sensitive = sorted(set)
	return objs, nil
}
