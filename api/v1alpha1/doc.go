// Package v1alpha1 holds the gitsync.dev/v1alpha1 API: Provider and Alert (this version
// only), and GitRepository, HelmRepository and Application as generated copies of their
// v1beta1 types (zz_generated.*_types.go; the CRDs serve both versions, store v1beta1).
// +kubebuilder:object:generate=true
// +groupName=gitsync.dev
package v1alpha1

//go:generate go run ../../hack/apicopy
