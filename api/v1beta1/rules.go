package v1beta1

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// DefaultNamespace is where namespaced objects without a namespace in Git land:
// spec.targetNamespace, else the Application's own namespace.
func (in *Application) DefaultNamespace() string {
	if in.Spec.TargetNamespace != "" {
		return in.Spec.TargetNamespace
	}
	return in.Namespace
}

// RefusesEmpty tells whether a sync refuses a render of n objects (the main set) rather
// than prune all the previous objects of the inventory: it prunes (Prunes) without
// spec.allowEmpty.
func (in *Application) RefusesEmpty(n, previous int) bool {
	return n == 0 && in.Prunes() && previous > 0 && !in.Spec.AllowEmpty
}

// IgnorePointers returns the JSON pointers of spec.ignoreDifferences that apply to obj:
// the one place the sync, drift and every compare read them from.
func (in *Application) IgnorePointers(obj *unstructured.Unstructured) []string {
	var pointers []string
	gvk := obj.GroupVersionKind()
	for _, rule := range in.Spec.IgnoreDifferences {
		if rule.Group != gvk.Group || rule.Kind != gvk.Kind {
			continue
		}
		if rule.Name != "" && rule.Name != obj.GetName() {
			continue
		}
		if rule.Namespace != "" && rule.Namespace != obj.GetNamespace() {
			continue
		}
		pointers = append(pointers, rule.JSONPointers...)
	}
	return pointers
}

// ReportedOnly tells whether a Ready=False reason is a state the Application reports but
// does not change by itself, and that no sync failed for: drift left alone (selfHeal off,
// or a fight's backoff) and objects that left Git which a sync request kept from the
// prune, a selective sync that left the rest of a revision for a full sync, and a newer
// revision that waits for a sync request (autoSync false). A wait waits through it; a
// sync request is not failed by it.
func ReportedOnly(reason string) bool {
	return reason == DriftDetectedReason || reason == PruneSkippedReason || reason == PartiallySyncedReason ||
		reason == AwaitingSyncReason
}
