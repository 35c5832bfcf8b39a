package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/install"
)

// Version is the binary's version, set at build time with
// -ldflags "-X github.com/gitsync-dev/gitsync/internal/cli.Version=v0.1.0"; else the
// module version from the build info.
var Version = ""

func clientVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (o *options) newInstallCommand() *cobra.Command {
	var export, waitReady, leastPrivilege bool
	var image string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "install [--export]",
		Short: "Install gitsync (the embedded config/default: CRDs, RBAC, the manager in gitsync-system), or print it with --export",
		Example: `  gitsync install
  gitsync install --export > gitsync.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := install.ManifestsWith(defaultImage(image), leastPrivilege)
			if err != nil {
				return err
			}
			if export {
				return install.Export(o.Out, objs)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_, err = install.Run(ctx, c, objs, o.Out, waitReady)
			return err
		},
	}
	cmd.Flags().BoolVar(&export, "export", false, "print the manifests instead of applying them")
	addImageFlag(cmd, &image)
	cmd.Flags().BoolVar(&waitReady, "wait", true, "wait until the manager's Deployment is available (the CRDs are always waited for)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	cmd.Flags().BoolVar(&leastPrivilege, "least-privilege", true,
		"bind the operator to gitsync-manager-tenant-mode (read all, write only gitsync's kinds and events); false: gitsync-manager (write anything), for Applications run with the operator's own identity")
	return cmd
}

// addImageFlag is the --image flag of install and bootstrap.
func addImageFlag(cmd *cobra.Command, image *string) {
	cmd.Flags().StringVar(image, "image", "", "the manager's image; default: the image of this binary's version")
}

// defaultImage is image, else the image of this binary's version ("": a dev build keeps
// the embedded manifests' image).
func defaultImage(image string) string {
	if image == "" && clientVersion() != "dev" {
		return "ghcr.io/gitsync-dev/gitsync:" + clientVersion()
	}
	return image
}

func (o *options) newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the client's version and, when the cluster is reachable, the server's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Out, "client: %s\n", clientVersion())
			cfg, err := o.restConfig()
			if err == nil {
				cfg.Timeout = 5 * time.Second
				var dc *discovery.DiscoveryClient
				if dc, err = discovery.NewDiscoveryClientForConfig(cfg); err == nil {
					var v fmt.Stringer
					if v, err = dc.ServerVersion(); err == nil {
						fmt.Fprintf(o.Out, "kubernetes: %s\n", v)
						fmt.Fprintf(o.Out, "server: %s\n", o.managerVersion(cmd.Context()))
						return nil
					}
				}
			}
			fmt.Fprintf(o.Out, "server: unreachable (%s)\n", strings.TrimSpace(err.Error()))
			return nil
		},
	}
}

// managerVersion is the image tag of the installed manager, or "not installed".
func (o *options) managerVersion(ctx context.Context) string {
	c, err := o.client()
	if err != nil {
		return "unknown"
	}
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/name": "gitsync"}); err != nil || len(list.Items) == 0 {
		return "not installed"
	}
	for _, ctr := range list.Items[0].Spec.Template.Spec.Containers {
		if ctr.Name == "manager" {
			if i := strings.LastIndex(ctr.Image, ":"); i >= 0 {
				return ctr.Image[i+1:] + " (" + list.Items[0].Namespace + ")"
			}
			return ctr.Image
		}
	}
	return "unknown"
}
