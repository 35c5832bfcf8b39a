package drift

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is what a watch cache keeps of an object: its name, namespace, resourceVersion,
// labels and managedFields (see compact). It is a quarter of the size of the
// metav1.PartialObjectMetadata it is made from, whose other fields the readers never
// look at; with one per managed object, that is most of the caches' memory.
//
// Meta is a metav1.Object so that the informer can key and compare it. The fields it
// does not keep read as their zero value, and setting them does nothing. Cached objects
// are read only, as any informer's are.
type Meta struct {
	name, namespace, resourceVersion string
	labels                           map[string]string
	managedFields                    []metav1.ManagedFieldsEntry
}

var _ metav1.Object = (*Meta)(nil)

func (m *Meta) GetNamespace() string                          { return m.namespace }
func (m *Meta) SetNamespace(namespace string)                 { m.namespace = namespace }
func (m *Meta) GetName() string                               { return m.name }
func (m *Meta) SetName(name string)                           { m.name = name }
func (m *Meta) GetResourceVersion() string                    { return m.resourceVersion }
func (m *Meta) SetResourceVersion(version string)             { m.resourceVersion = version }
func (m *Meta) GetLabels() map[string]string                  { return m.labels }
func (m *Meta) SetLabels(labels map[string]string)            { m.labels = labels }
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return m.managedFields }
func (m *Meta) SetManagedFields(entries []metav1.ManagedFieldsEntry) {
	m.managedFields = entries
}

// Not kept.

func (m *Meta) GetGenerateName() string                     { return "" }
func (m *Meta) SetGenerateName(string)                      {}
func (m *Meta) GetUID() types.UID                           { return "" }
func (m *Meta) SetUID(types.UID)                            {}
func (m *Meta) GetGeneration() int64                        { return 0 }
func (m *Meta) SetGeneration(int64)                         {}
func (m *Meta) GetSelfLink() string                         { return "" }
func (m *Meta) SetSelfLink(string)                          {}
func (m *Meta) GetCreationTimestamp() metav1.Time           { return metav1.Time{} }
func (m *Meta) SetCreationTimestamp(metav1.Time)            {}
func (m *Meta) GetDeletionTimestamp() *metav1.Time          { return nil }
func (m *Meta) SetDeletionTimestamp(*metav1.Time)           {}
func (m *Meta) GetDeletionGracePeriodSeconds() *int64       { return nil }
func (m *Meta) SetDeletionGracePeriodSeconds(*int64)        {}
func (m *Meta) GetAnnotations() map[string]string           { return nil }
func (m *Meta) SetAnnotations(map[string]string)            {}
func (m *Meta) GetFinalizers() []string                     { return nil }
func (m *Meta) SetFinalizers([]string)                      {}
func (m *Meta) GetOwnerReferences() []metav1.OwnerReference { return nil }
func (m *Meta) SetOwnerReferences([]metav1.OwnerReference)  {}
