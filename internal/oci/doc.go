// Package oci pulls artifacts from OCI registries in Flux's layout (a tag, a semver range
// over the tags, or a digest; a HEAD of the manifest first, nothing downloaded while the
// digest is unchanged) and unpacks their content layer, bounded, into a checkout that
// Applications render like a Git checkout; and packs and pushes a directory as one.
package oci
