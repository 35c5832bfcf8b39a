package oci

import (
	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// maxAnnotationBytes bounds an annotation value kept in status.
const maxAnnotationBytes = 1024

// metadataOf keeps the manifest annotations of the artifact's origin (Flux's source and
// revision), each value at most maxAnnotationBytes.
func metadataOf(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{gitsyncv1.OCISourceAnnotation, gitsyncv1.OCIRevisionAnnotation} {
		v, ok := annotations[k]
		if !ok {
			continue
		}
		if len(v) > maxAnnotationBytes {
			v = v[:maxAnnotationBytes]
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
