// Package v1beta1 holds the gitsync.dev/v1beta1 API, the stored version of every kind
// (GitRepository, HelmRepository, Application, Provider, Alert). api/v1alpha1 holds
// generated copies of these types (hack/apicopy): the CRDs serve both versions with
// conversion strategy None.
// +kubebuilder:object:generate=true
// +groupName=gitsync.dev
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "gitsync.dev", Version: "v1beta1"}

	// SchemeBuilder adds the types of this group-version to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
