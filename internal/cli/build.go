package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

type buildOptions struct {
	*options
	path        string
	root        string
	fromFile    string
	showSecrets bool
	decrypt     bool
	lookup      bool
	config      *rest.Config
}

func (o *options) newBuildCommand() *cobra.Command {
	b := &buildOptions{options: o}
	cmd := &cobra.Command{
		Use:   "build app NAME [--path DIR] [--from-file app.yaml] [--show-secrets]",
		Short: "Render an Application to stdout as multi-document YAML, as its next sync would apply it",
		Long: `Renders the Application from DIR, or else from its source's current revision, with the
owner labels and namespace defaulting of a sync. With --from-file (the Application's
YAML) and --path no cluster is needed. Secret values are masked unless --show-secrets.
A chart of a HelmRepository is pulled from the repository (the version spec.helm.version
selects, with the repository's credentials) and rendered, or rendered from --path.
SOPS-encrypted documents (spec.decryption) are printed as they are in Git, encrypted,
unless --decrypt, which reads the decryption Secret with your own rights; decrypted
values and variables from Secrets (spec.postBuild.substituteFrom) are masked unless
both --decrypt and --show-secrets are given.`,
		Example: `  gitsync build app web -n team-a
  gitsync build app web --from-file app.yaml --path ./apps/web
  gitsync build appset fleet     # the Applications an ApplicationSet generates`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return b.run(cmd.Context(), args)
		},
	}
	cmd.Flags().StringVar(&b.path, "path", "", "directory to render instead of the source's revision")
	cmd.Flags().StringVar(&b.root, "root", "", "with --path: the directory the render may read (default: the Git worktree holding --path, else --path itself)")
	cmd.Flags().StringVar(&b.fromFile, "from-file", "", "read the Application from this YAML file instead of the cluster")
	cmd.Flags().BoolVar(&b.showSecrets, "show-secrets", false, "print Secret values instead of ***")
	cmd.Flags().BoolVar(&b.decrypt, "decrypt", false, "decrypt SOPS-encrypted documents with the decryption Secret, read with your rights")
	addLookupFlag(cmd, &b.lookup)
	withAppSetHelp(cmd, appSetForm{
		use: "build appset NAME",
		long: `Prints the Applications the ApplicationSet generates now, as multi-document YAML:
its generators and template run as the operator would, with your rights, over its
GitRepositories' current artifacts and the Clusters (the pullRequest generator is not
available here).`,
		example: `  gitsync build appset fleet -n apps
  gitsync build app web -n team-a       # one Application's objects`,
		appOnly: []string{"path", "root", "from-file", "show-secrets", "decrypt", "lookup"},
	})
	return cmd
}

func (b *buildOptions) run(ctx context.Context, args []string) error {
	if isAppSet(args[0]) {
		return b.buildAppSet(ctx, args[1])
	}
	if k, err := parseKind(args[0]); err != nil || k != kindApp {
		return fmt.Errorf("build works on apps: gitsync build app NAME")
	}
	var app *gitsyncv1.Application
	var c client.Client
	var err error
	if b.fromFile != "" {
		if app, err = readApplication(b.fromFile, args[1]); err != nil {
			return err
		}
		if app.Namespace == "" {
			// -n, else the kubeconfig's namespace when there is one, else "default".
			if app.Namespace, err = b.namespace(); err != nil {
				app.Namespace = "default"
			}
		}
	} else {
		ns, err := b.namespace()
		if err != nil {
			return err
		}
		if c, err = b.client(); err != nil {
			return err
		}
		if b.config, err = b.restConfig(); err != nil {
			return err
		}
		app = &gitsyncv1.Application{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[1]}, app); err != nil {
			return notFoundOr(err, kindApp, ns, args[1])
		}
	}
	var r *rendered
	switch {
	case b.path != "":
		r, err = renderLocal(ctx, localPath{Dir: b.path, Root: b.root}, app, operations.Cluster(b.config, c, app, b.decrypt, b.lookup), b.decrypt)
	case c == nil:
		return fmt.Errorf("--from-file needs --path: the source's revision is read from the cluster")
	default:
		r, err = operations.RenderFromSource(ctx, c, app, pinnedRevision(app), operations.Cluster(b.config, c, app, b.decrypt, b.lookup), b.decrypt)
	}
	if err != nil {
		return err
	}
	if len(r.Encrypted) > 0 {
		fmt.Fprintf(b.ErrOut, "# %s left encrypted (--decrypt decrypts them): %s\n",
			operations.EncryptedCount(r.Encrypted), strings.Join(r.Encrypted, ", "))
	}
	w := io.Writer(b.Out)
	if !b.decrypt || !b.showSecrets {
		w = maskingWriter{w: b.Out, sensitive: r.Sensitive}
	}
	owner := apply.Owner{Name: app.Name, Namespace: app.Namespace}
	for i, obj := range r.Objects {
		doc := obj.DeepCopy()
		labels := doc.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range owner.Labels() {
			labels[k] = v
		}
		doc.SetLabels(labels)
		if !b.showSecrets {
			drift.MaskSecret(doc, nil)
		}
		if err := writeDocument(w, i, doc); err != nil {
			return err
		}
	}
	return nil
}

func writeDocument(w io.Writer, i int, obj *unstructured.Unstructured) error {
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", apply.Subject(obj), err)
	}
	if i > 0 {
		fmt.Fprintln(w, "---")
	}
	_, err = w.Write(data)
	return err
}
