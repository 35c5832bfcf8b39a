// Package source resolves Git references, fetches the commit they point at and
// checks its files out into a content-addressed cache directory.
//
// Every [Fetcher.Fetch] starts with one listing of the remote's references
// (the equivalent of git ls-remote). When the resolved commit is already
// checked out, either because the caller's current artifact is that commit or
// because another repository fetched it, nothing more is transferred.
// Otherwise the commit is fetched shallowly into memory and its tree is written
// without a .git directory to <storage>/checkouts/<DirName>.
//
// The package is free of Kubernetes imports: the controller builds a [Request]
// from a GitRepository and an [Auth] from its Secret's data.
package source
