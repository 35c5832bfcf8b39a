package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitsync-dev/gitsync/internal/bootstrap"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Environment variables read when --password and --token are not given, so that a
// credential need not be on the command line.
const (
	passwordEnv = "GITSYNC_GIT_PASSWORD"
	tokenEnv    = "GITSYNC_GIT_TOKEN"
)

// gitAuthFlags are a repository's credentials, in the keys of a GitRepository's Secret.
type gitAuthFlags struct {
	username, password, token      string
	privateKeyFile, knownHostsFile string
	caFile                         string
}

func (f *gitAuthFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.username, "username", "", "HTTP basic auth user name (or SSH user name with --password)")
	cmd.Flags().StringVar(&f.password, "password", "", "HTTP basic auth password, or the passphrase of --private-key-file (default $"+passwordEnv+")")
	cmd.Flags().StringVar(&f.token, "token", "", "HTTP bearer token (default $"+tokenEnv+")")
	cmd.Flags().StringVar(&f.privateKeyFile, "private-key-file", "", "SSH private key (PEM) for an ssh:// or git@host:path URL")
	cmd.Flags().StringVar(&f.knownHostsFile, "known-hosts-file", "", "known_hosts with the SSH server's host key (required with SSH)")
	cmd.Flags().StringVar(&f.caFile, "ca-file", "", "CA bundle (PEM) for an https URL")
}

// auth reads the files and checks the combination as a GitRepository's Secret is
// checked; nil when no credential was given.
func (f *gitAuthFlags) auth() (*source.Auth, error) {
	if f.password == "" {
		f.password = os.Getenv(passwordEnv)
	}
	if f.token == "" {
		f.token = os.Getenv(tokenEnv)
	}
	data := map[string][]byte{
		source.SecretKeyUsername:    []byte(f.username),
		source.SecretKeyPassword:    []byte(f.password),
		source.SecretKeyBearerToken: []byte(f.token),
	}
	for key, file := range map[string]string{
		source.SecretKeyIdentity: f.privateKeyFile, source.SecretKeyKnownHosts: f.knownHostsFile, source.SecretKeyCA: f.caFile,
	} {
		if file == "" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		data[key] = b
	}
	return source.AuthFromSecret(data)
}

func (o *options) newBootstrapCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Install gitsync and keep it managed from a Git repository",
	}
	cmd.AddCommand(o.newBootstrapGitCommand())
	return cmd
}

func (o *options) newBootstrapGitCommand() *cobra.Command {
	var opts bootstrap.Options
	var authFlags gitAuthFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "git --url URL --branch BRANCH --path DIR",
		Short: "Commit gitsync's manifests to DIR/gitsync-system in a Git repository, install gitsync and sync DIR from there (gitsync included)",
		Long: `Commits gitsync's own manifests (as gitsync install --export --least-privilege=false prints them) and a
GitRepository + Application (sync.yaml) to DIR/gitsync-system on the branch, installs
gitsync, stores the credentials in the Secret gitsync-system/gitsync-git-auth (never in
Git) and applies the GitRepository and the Application, which then keep everything
below DIR synced, gitsync itself included. The Application acts as gitsync's own
service account (cluster-wide rights), not as the tenant default gitsync-tenant.
Run again, it commits nothing and changes nothing when nothing differs.`,
		Example: `  GITSYNC_GIT_TOKEN=... gitsync bootstrap git --url https://git.example.com/fleet.git --branch main --path clusters/prod
  gitsync bootstrap git --url git@git.example.com:org/fleet.git --branch main --path clusters/dev \
    --private-key-file ~/.ssh/fleet --known-hosts-file known_hosts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			auth, err := authFlags.auth()
			if err != nil {
				return err
			}
			opts.Auth, opts.Image, opts.Out = auth, defaultImage(opts.Image), o.Out
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_, err = bootstrap.Run(ctx, c, opts)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "the repository's URL (https://, http://, ssh://, git@host:path); committed to it, so without credentials")
	cmd.Flags().StringVar(&opts.Branch, "branch", "main", "the branch to commit to and sync from (created when missing)")
	cmd.Flags().StringVar(&opts.Path, "path", "", "the directory of this cluster in the repository, e.g. clusters/prod")
	cmd.Flags().DurationVar(&opts.Interval, "interval", time.Minute, "the GitRepository's poll interval")
	authFlags.add(cmd)
	addImageFlag(cmd, &opts.Image)
	cmd.Flags().BoolVar(&opts.WaitReady, "wait", true, "wait until the manager's Deployment is available")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long the whole bootstrap may take")
	_ = cmd.MarkFlagRequired("url")
	_ = cmd.MarkFlagRequired("path")
	return cmd
}
