package build

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// File is one rendered manifest file, such as a Helm template's output.
type File struct {
	Name string
	Data []byte
}

// Decode reads rendered manifests with the checks and limits of a build: the size and
// value caps, every document an object with apiVersion, kind and name (generateName for
// hooks), lists unwrapped, and no object defined twice.
func Decode(files []File) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	seen := map[string]string{}
	b := newBudget(maxRenderValues)
	for _, f := range files {
		if err := b.admit(f.Name, int64(len(f.Data))); err != nil {
			return nil, err
		}
		if err := prescan(f.Name, f.Data); err != nil {
			return nil, err
		}
		fileObjs, err := decodeManifests(f.Name, f.Data, b)
		if err != nil {
			return nil, err
		}
		for _, obj := range fileObjs {
			id := objectID(obj)
			if first, dup := seen[id]; dup {
				return nil, fmt.Errorf("%s: %s is also defined in %s", f.Name, id, first)
			}
			seen[id] = f.Name
		}
		objs = append(objs, fileObjs...)
	}
	return objs, nil
}
