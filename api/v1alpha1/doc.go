// Package v1alpha1 holds the gitsync.dev/v1alpha1 API, the first version of every kind:
// generated copies of the v1beta1 types (zz_generated.*_types.go, by hack/apicopy). The
// CRDs serve both versions, store v1beta1 and convert by relabelling (strategy None).
// +kubebuilder:object:generate=true
// +groupName=gitsync.dev
package v1alpha1

//go:generate go run ../../hack/apicopy
