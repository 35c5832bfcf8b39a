package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// maxKeyFile bounds what --key reads.
const maxKeyFile = 64 << 10

type verifyOptions struct {
	*options
	keyFile   string
	keySecret string
}

func (o *options) newVerifyCommand() *cobra.Command {
	v := &verifyOptions{options: o}
	cmd := &cobra.Command{
		Use:   "verify app NAME (--key FILE | --key-secret NAMESPACE/NAME)",
		Short: "Check an Application's signed sync attestation and that the cluster still holds it (exit 0 ok, 1 refused or drift, 2 error)",
		Long: `Loads the newest attestation in the Application's history (status.history[].attestation)
from its ConfigMap, checks its signature with the public key you trust (--key FILE, a
PEM public key such as cosign.pub, or the cosign.pub of the Secret --key-secret names),
checks that it attests this Application at that revision, and then that every attested
object in the cluster still holds the fields gitsync applied. Drift is listed by object
and field, with the field managers that wrote it. Exit codes: 0 verified and no drift,
1 refused (not signed by that key, or for another Application or revision) or drift,
2 any other error.`,
		Example: `  gitsync verify app web -n team-a --key cosign.pub
  gitsync verify app web -n team-a --key-secret gitsync-system/attestation-key`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		Annotations:       map[string]string{errorExitCodeAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			ok, err := v.run(cmd.Context(), args)
			if errors.Is(err, operations.ErrRefused) {
				return &ExitCodeError{Code: ExitChanges, Err: err}
			}
			if err != nil {
				return &ExitCodeError{Code: ExitError, Err: err}
			}
			if !ok {
				return &ExitCodeError{Code: ExitChanges}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&v.keyFile, "key", "", "PEM public key to trust (cosign.pub)")
	cmd.Flags().StringVar(&v.keySecret, "key-secret", "", "NAMESPACE/NAME of a Secret whose cosign.pub to trust (the operator's --attestation-key-secret)")
	return cmd
}

// run prints the verification and says whether the cluster holds what was attested.
func (v *verifyOptions) run(ctx context.Context, args []string) (bool, error) {
	if k, err := parseKind(args[0]); err != nil || k != kindApp {
		return false, fmt.Errorf("verify works on apps: gitsync verify app NAME")
	}
	var opts operations.VerifyOptions
	switch {
	case v.keyFile != "" && v.keySecret != "":
		return false, errors.New("give one of --key and --key-secret")
	case v.keyFile != "":
		f, err := os.Open(v.keyFile)
		if err != nil {
			return false, fmt.Errorf("reading --key: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
		if err != nil {
			return false, fmt.Errorf("reading --key: %w", err)
		}
		if len(b) > maxKeyFile {
			return false, fmt.Errorf("reading --key: larger than %d bytes", maxKeyFile)
		}
		opts.PublicKey = b
	case v.keySecret != "":
		ns, name, ok := strings.Cut(v.keySecret, "/")
		if !ok || ns == "" || name == "" {
			return false, fmt.Errorf("--key-secret %q: want NAMESPACE/NAME", v.keySecret)
		}
		opts.KeySecret = types.NamespacedName{Namespace: ns, Name: name}
	default:
		return false, errors.New("no public key to trust: give --key FILE or --key-secret NAMESPACE/NAME")
	}
	c, err := v.client()
	if err != nil {
		return false, err
	}
	ns, err := v.namespace()
	if err != nil {
		return false, err
	}
	res, err := operations.VerifyApp(ctx, c, client.ObjectKey{Namespace: ns, Name: args[1]}, opts)
	if err != nil {
		return false, err
	}
	fmt.Fprint(v.Out, res.Report())
	return res.OK(), nil
}
