// Package bootstrap installs gitsync and commits its own manifests to a Git repository, with the GitRepository and Application that keep gitsync managed from there (`gitsync bootstrap git`).
package bootstrap

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/install"
	"github.com/gitsync-dev/gitsync/internal/redact"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Options of one bootstrap.
type Options struct {
	// URL, Branch and Path: where gitsync's manifests go (Path/gitsync-system/), and what
	// the GitRepository and the Application read.
	URL, Branch, Path string
	// Auth are the repository's credentials (nil: anonymous), used for the clone and the
	// push and stored in the Secret AuthSecretName for the GitRepository.
	Auth *source.Auth
	// Interval is the GitRepository's poll interval (default 1m).
	Interval time.Duration
	// Image is the manager's image ("": the embedded manifests').
	Image string
	// Timeout bounds each Git operation (default 1m).
	Timeout time.Duration
	// WaitReady waits for the manager's Deployment to be available.
	WaitReady bool
	// Out receives the progress lines. Nothing printed holds a credential.
	Out io.Writer
}

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return time.Minute
	}
	return o.Timeout
}

// Result is what a bootstrap changed.
type Result struct {
	// Commit is the commit pushed, "" when the branch already held the manifests.
	Commit string
	// Files are the paths written in the repository.
	Files []string
	// Changes are the applies, one per object, in order.
	Changes []install.Change
}

// Unchanged tells whether the bootstrap changed nothing, in Git or in the cluster.
func (r *Result) Unchanged() bool {
	return r.Commit == "" && install.AllUnchanged(r.Changes)
}

// Run commits gitsync's manifests and the sync objects to the branch (first: a failing
// push leaves the cluster as it was), installs gitsync with c and applies the
// credentials' Secret, the GitRepository and the Application. Run again with the same
// options, it makes no commit and every apply is unchanged.
func Run(ctx context.Context, c client.Client, o Options) (*Result, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if err := checkURL(o.URL); err != nil {
		return nil, err
	}
	if o.Branch == "" {
		return nil, fmt.Errorf("--branch is required")
	}
	base, err := cleanPath(o.Path)
	if err != nil {
		return nil, err
	}
	// Full privilege: the sync Application applies gitsync's own install (CRDs,
	// ClusterRoles, its Deployment) as the manager's service account, which the
	// least-privilege role (read all, write only gitsync's kinds) would not allow.
	objs, err := install.ManifestsWith(o.Image, false)
	if err != nil {
		return nil, err
	}
	m, err := managerOf(objs)
	if err != nil {
		return nil, err
	}
	dir := path.Join(base, m.namespace)
	manifests, err := install.ExportBytes(objs)
	if err != nil {
		return nil, err
	}
	syncObjs := syncObjects(o, base, m)
	syncYAML, err := install.ExportBytes(syncObjs)
	if err != nil {
		return nil, err
	}
	res := &Result{Files: []string{path.Join(dir, ManifestsFile), path.Join(dir, SyncFile)}}

	rem, err := newRemote(o)
	if err != nil {
		return nil, err
	}
	gitCtx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	res.Commit, err = rem.commitAndPush(gitCtx, map[string][]byte{res.Files[0]: manifests, res.Files[1]: syncYAML},
		fmt.Sprintf("Update gitsync in %s", base),
		fmt.Sprintf("Bootstrap gitsync in %s\n\n%s holds gitsync's manifests (as `gitsync install --export\n--least-privilege=false` prints them), %s the GitRepository and Application that keep\n%s synced, gitsync included.", base, ManifestsFile, SyncFile, base))
	if err != nil {
		return nil, err
	}
	if res.Commit == "" {
		fmt.Fprintf(o.Out, "✔ %s unchanged on %s\n", dir, o.Branch)
	} else {
		fmt.Fprintf(o.Out, "✔ committed %s to %s: %s\n", res.Commit[:12], o.Branch, strings.Join(res.Files, ", "))
	}

	res.Changes, err = install.Run(ctx, c, objs, o.Out, o.WaitReady)
	if err != nil {
		return res, err
	}
	var own []*unstructured.Unstructured
	if o.Auth != nil {
		secret, err := authSecret(o.Auth, m.namespace)
		if err != nil {
			return res, err
		}
		own = append(own, secret)
		own = append(own, authSecretAccess(m)...)
	}
	changes, err := install.Apply(ctx, c, append(own, syncObjs...))
	res.Changes = append(res.Changes, changes...)
	for _, ch := range changes {
		fmt.Fprintf(o.Out, "%s %s\n", ch.Action, ch.Subject)
	}
	if err != nil {
		return res, err
	}
	if install.AllUnchanged(res.Changes) {
		fmt.Fprintln(o.Out, "✔ cluster unchanged")
	}
	fmt.Fprintf(o.Out, "✔ gitsync is managed from %s (branch %s, path %s)\n", redact.URL(o.URL), o.Branch, base)
	return res, nil
}

// checkURL refuses an empty URL and one with credentials in it: the URL is committed
// to the repository; credentials go through the flags into a Secret. Credentials are a
// password, and for every scheme but ssh any user name at all: GitHub, GitLab and Gitea
// take a token written as the user name (https://TOKEN@host/...). An ssh:// user name
// (git@) is the login, not a secret, and stays allowed, as does scp-like git@host:path.
func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("--url is required")
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return nil // scp-like, or not a URL: the GitRepository refuses what it cannot read
	}
	if _, has := u.User.Password(); has {
		return fmt.Errorf("--url %s holds a password: it would be committed; pass --username/--password instead", redact.URL(raw))
	}
	if !strings.EqualFold(u.Scheme, "ssh") {
		return fmt.Errorf("--url %s holds a user name, which %s servers take as a token: it would be committed; pass --username with --password or --token instead",
			redact.URL(raw), u.Scheme)
	}
	return nil
}
