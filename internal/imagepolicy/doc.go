// Package imagepolicy chooses the latest tag of a list by an ImagePolicy (semver,
// alphabetical or numerical, after Flux's filterTags).
package imagepolicy
