// Package imagescan lists the tags of a container image repository (an ImageRepository)
// through the egress guard, bounded, and keeps the full list in the operator's storage.
package imagescan
