package mcp

import (
	"io"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kube is how a command reaches the cluster as the person running it: the CLI's
// kubeconfig flags (cli.Kube).
type Kube interface {
	RESTConfig() (*rest.Config, error)
	Client() (client.WithWatch, error)
	// Namespace is -n, else the kubeconfig context's namespace, else "default".
	Namespace() (string, error)
}

// NewCommand is `gitsync mcp`: the server over in and out with k's identity, its call log
// on errOut; version is reported to clients.
func NewCommand(k Kube, in io.Reader, out, errOut io.Writer, version string) *cobra.Command {
	var allowWrite bool
	cmd := &cobra.Command{
		Use:   "mcp [--allow-write]",
		Short: "Serve a Model Context Protocol server over stdio with your kubeconfig's identity (read-only unless --allow-write)",
		Long: `Serves gitsync's tools to an MCP client (an AI assistant) over stdin/stdout: list and get
Applications and sources, an Application's tree, diff (also at another commit or branch),
history and events, and explain (why it is not Ready, Synced or Healthy). With
--allow-write it also offers reconcile, suspend, resume and rollback_application; without
it they are not offered at all. Every call acts as you (your kubeconfig), so Kubernetes
RBAC applies, and every call is logged to stderr.`,
		Example: `  # in an MCP client's configuration:
  {"mcpServers": {"gitsync": {"command": "gitsync", "args": ["mcp", "--context", "prod"]}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := k.Client()
			if err != nil {
				return err
			}
			cfg, err := k.RESTConfig()
			if err != nil {
				return err
			}
			ns, err := k.Namespace()
			if err != nil {
				return err
			}
			srv, err := New(Options{Client: c, Config: cfg, Namespace: ns, AllowWrite: allowWrite, Log: errOut, Version: version})
			if err != nil {
				return err
			}
			return srv.Run(cmd.Context(), &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopCloser{out}})
		},
	}
	cmd.Flags().BoolVar(&allowWrite, "allow-write", false, "also offer the write tools: reconcile, suspend, resume, rollback_application")
	return cmd
}

// nopCloser leaves the process's stdout open when the MCP session ends.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
