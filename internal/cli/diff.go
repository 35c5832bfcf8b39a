package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

type diffOptions struct {
	*options
	path     string
	root     string
	exitCode bool
	decrypt  bool
	lookup   bool
	revision string
}

func (o *options) newDiffCommand() *cobra.Command {
	d := &diffOptions{options: o}
	cmd := &cobra.Command{
		Use:   "diff app NAME [--path DIR | --revision SHA|BRANCH]",
		Short: "Show what the next sync of an Application (or of every Application on a source) would change (server-side dry-run; exit 0 none, 1 changes, 2 error)",
		Long: `Renders the Application (from DIR, or else from its source's current revision) the way
a sync does, and compares every object with the cluster by a server-side dry-run apply,
field by field, with the same owner labels and ignoreDifferences as the drift detector.
Secret values are never printed. Exit codes: 0 no change, 1 changes, 2 any error.
SOPS-encrypted documents (spec.decryption) are left encrypted and not compared unless
--decrypt, which reads the decryption Secret with your own rights; decrypted values and
variables from Secrets (spec.postBuild.substituteFrom) are masked either way.
A dry-run apply needs patch permission on the objects in Kubernetes. A chart of a
HelmRepository is pulled from the repository (the version spec.helm.version selects).
A chart's lookup finds nothing unless --lookup: it would read the cluster with your
rights, which are often more than the Application's.
--revision renders another revision of the Application's GitRepository instead: a
branch (its head now), <branch>@sha1:<commit> or a commit (in the branch the
GitRepository follows), e.g. a pull request's head. "diff source NAME --revision R"
diffs every Application on the GitRepository NAME at R (one fetch), prints a table of
each one's counts (the table a pull-request preview comments) and each one's diff; an
Application that fails to render or is refused by the API server exits 2.`,
		Example: `  gitsync diff app web -n team-a
  gitsync diff app web --path ./apps/web/overlays/prod
  gitsync diff app web -n team-a --revision feature-branch
  gitsync diff source platform -n team-a --revision main
  gitsync diff appset fleet      # Applications an ApplicationSet would create, change, delete`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		Annotations:       map[string]string{errorExitCodeAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := d.run(cmd.Context(), args)
			if err != nil {
				return &ExitCodeError{Code: ExitError, Err: err}
			}
			if changes && d.exitCode {
				return &ExitCodeError{Code: ExitChanges}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&d.path, "path", "", "directory to render instead of the source's revision (the kustomization or YAML directory itself; confined to --root)")
	cmd.Flags().StringVar(&d.root, "root", "", "with --path: the directory the render may read (an overlay's ../base must be inside it); default: the Git worktree holding --path, else --path itself (as Argo CD's --local-repo-root)")
	cmd.Flags().BoolVar(&d.exitCode, "exit-code", true, "exit 1 when there are changes; false: exit 0 unless an error occurs")
	cmd.Flags().BoolVar(&d.decrypt, "decrypt", false, "decrypt SOPS-encrypted documents with the decryption Secret, read with your rights (values stay masked)")
	cmd.Flags().StringVar(&d.revision, "revision", "", "render this revision of the GitRepository instead of its current one: a branch, <branch>@sha1:<commit> or a commit")
	addLookupFlag(cmd, &d.lookup)
	withAppSetHelp(cmd, appSetForm{
		use: "diff appset NAME",
		long: `Compares the Applications the ApplicationSet generates now (its generators and
template run as the operator would, with your rights) with those it has: each one it
would create, change (the fields) or delete. Exit codes: 0 no change, 1 changes, 2 any
error.`,
		example: `  gitsync diff appset fleet -n apps
  gitsync diff app web -n team-a        # what one Application's next sync would change`,
		appOnly: []string{"path", "root", "decrypt", "revision", "lookup"},
	})
	return cmd
}

// run prints the diff and says whether anything would change.
func (d *diffOptions) run(ctx context.Context, args []string) (bool, error) {
	if isAppSet(args[0]) {
		return d.diffAppSet(ctx, args[1])
	}
	k, err := parseKind(args[0])
	if err == nil && k == kindSource {
		return d.runSource(ctx, args[1])
	}
	if err != nil || k != kindApp {
		return false, fmt.Errorf("diff works on apps, sources and appsets: gitsync diff app NAME, gitsync diff source NAME --revision R, gitsync diff appset NAME")
	}
	if d.revision != "" && d.path != "" {
		return false, fmt.Errorf("--revision and --path exclude each other")
	}
	diff, err := d.diffApp(ctx, "", args[1], localPath{Dir: d.path, Root: d.root}, d.decrypt, d.lookup, d.revision)
	if err != nil {
		return false, err
	}
	fmt.Fprint(d.Out, diff.Report())
	return diff.Changes(), nil
}

// diffApp renders the Application ns/name (ns "": the kubeconfig's namespace) from local,
// else from revision of its source (""; the current or pinned revision), and compares it with the cluster
// (operations.DiffApp, operations.DiffRendered). With decrypt, SOPS-encrypted content is
// decrypted with the user's rights to the decryption Secret (its values stay masked);
// with lookup, a chart's lookup reads the cluster as the user (else it finds nothing).
func (o *options) diffApp(ctx context.Context, ns, name string, local localPath, decrypt, lookup bool, revision string) (*operations.Diff, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	if ns == "" {
		if ns, err = o.namespace(); err != nil {
			return nil, err
		}
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	if local.Dir == "" {
		return operations.DiffApp(ctx, cfg, c, key, operations.DiffOptions{Revision: revision, Decrypt: decrypt, Lookup: lookup})
	}
	app, err := operations.GetApp(ctx, c, key)
	if err != nil {
		return nil, err
	}
	r, err := renderLocal(ctx, local, app, operations.Cluster(cfg, c, app, decrypt, lookup), decrypt)
	if err != nil {
		return nil, err
	}
	return operations.DiffRendered(ctx, c, app, r)
}
