package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"github.com/gitsync-dev/gitsync/internal/oci"
)

// pushArtifactOptions are the flags of `gitsync push artifact`.
type pushArtifactOptions struct {
	path, source, revision, creds string
	insecure                      bool
}

// newPushCommand is `gitsync push artifact oci://HOST/PATH:TAG --path DIR --source URL
// --revision REV`: DIR packed in Flux's layout (what `flux push artifact` writes, so an
// OCIRepository of either tool reads it) and pushed with the tag.
func (o *options) newPushCommand() *cobra.Command {
	push := &cobra.Command{
		Use:   "push artifact oci://HOST/PATH:TAG --path DIR --source URL --revision REV",
		Short: "Push a directory to an OCI registry as an artifact an OCIRepository syncs",
	}
	p := &pushArtifactOptions{}
	artifact := &cobra.Command{
		Use:   "artifact oci://HOST/PATH:TAG --path DIR --source URL --revision REV",
		Short: "Pack DIR (Flux's layout: one tar+gzip layer, source and revision annotations) and push it with TAG",
		Example: `  gitsync push artifact oci://ghcr.io/acme/manifests/web:v1.2.0 --path ./deploy \
    --source https://github.com/acme/web --revision v1.2.0@sha1:$(git rev-parse HEAD)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.pushArtifact(cmd, args[0], p)
		},
	}
	f := artifact.Flags()
	f.StringVar(&p.path, "path", "", "directory to pack (required)")
	f.StringVar(&p.source, "source", "", "where the content comes from, e.g. a Git URL (annotation org.opencontainers.image.source)")
	f.StringVar(&p.revision, "revision", "", "the content's revision there, e.g. main@sha1:<commit> (annotation org.opencontainers.image.revision)")
	f.StringVar(&p.creds, "creds", "", "registry credentials as USER:PASSWORD (default: the docker config's, else anonymous)")
	f.BoolVar(&p.insecure, "insecure-registry", false, "push over plain HTTP")
	_ = artifact.MarkFlagRequired("path")
	push.AddCommand(artifact)
	return push
}

func (o *options) pushArtifact(cmd *cobra.Command, url string, p *pushArtifactOptions) error {
	req := oci.PushRequest{URL: url, Dir: p.path, Source: p.source, Revision: p.revision, Insecure: p.insecure}
	if p.creds != "" {
		user, pass, ok := strings.Cut(p.creds, ":")
		if !ok {
			return errors.New("--creds takes USER:PASSWORD")
		}
		req.Auth = &authn.Basic{Username: user, Password: pass}
	}
	client, err := oci.New("", oci.Options{})
	if err != nil {
		return err
	}
	pushed, err := client.Push(cmd.Context(), req)
	if err != nil {
		return fmt.Errorf("pushing %s: %w", p.path, err)
	}
	fmt.Fprintf(o.Out, "pushed %s\n", pushed)
	return nil
}
