package v1alpha1

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/gitsync-dev/gitsync/api/v1beta1"
)

// GitRepository, HelmRepository and Application of this version convert through their
// v1beta1 hub (sigs.k8s.io/controller-runtime/pkg/conversion). Both versions have the
// same schema, field for field, so a conversion is a copy through their common JSON
// form; the fuzzed round trips in conversion_test.go fail as soon as the two differ,
// which is when a field-by-field conversion has to take over here.
var (
	_ conversion.Convertible = &GitRepository{}
	_ conversion.Convertible = &HelmRepository{}
	_ conversion.Convertible = &Application{}
)

// ConvertTo converts this GitRepository to the hub version (v1beta1).
func (in *GitRepository) ConvertTo(hub conversion.Hub) error {
	return convert(in, hub, v1beta1.GroupVersion.WithKind(GitRepositoryKind))
}

// ConvertFrom converts the hub version (v1beta1) to this GitRepository.
func (in *GitRepository) ConvertFrom(hub conversion.Hub) error {
	return convert(hub, in, GroupVersion.WithKind(GitRepositoryKind))
}

// ConvertTo converts this HelmRepository to the hub version (v1beta1).
func (in *HelmRepository) ConvertTo(hub conversion.Hub) error {
	return convert(in, hub, v1beta1.GroupVersion.WithKind(HelmRepositoryKind))
}

// ConvertFrom converts the hub version (v1beta1) to this HelmRepository.
func (in *HelmRepository) ConvertFrom(hub conversion.Hub) error {
	return convert(hub, in, GroupVersion.WithKind(HelmRepositoryKind))
}

// ConvertTo converts this Application to the hub version (v1beta1).
func (in *Application) ConvertTo(hub conversion.Hub) error {
	return convert(in, hub, v1beta1.GroupVersion.WithKind(ApplicationKind))
}

// ConvertFrom converts the hub version (v1beta1) to this Application.
func (in *Application) ConvertFrom(hub conversion.Hub) error {
	return convert(hub, in, GroupVersion.WithKind(ApplicationKind))
}

// convert copies src into dst (of kind gvk) through JSON, and sets dst's apiVersion and kind.
func convert(src, dst runtime.Object, gvk schema.GroupVersionKind) error {
	data, err := json.Marshal(src)
	if err != nil {
		return fmt.Errorf("converting %s: %w", gvk.Kind, err)
	}
	// Unmarshal merges into what is there: start from the zero value.
	v := reflect.ValueOf(dst).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("converting %s to %s: %w", gvk.Kind, gvk.GroupVersion(), err)
	}
	dst.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
