// Package v1alpha1 holds the gitsync.dev/v1alpha1 API: GitRepository, Application, Provider and Alert.
// +kubebuilder:object:generate=true
// +groupName=gitsync.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of gitsync's API.
	GroupVersion = schema.GroupVersion{Group: "gitsync.dev", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this group-version to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
