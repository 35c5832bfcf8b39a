package install

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Run applies objs (see Apply), printing one line per object to out, removes the manager
// role an earlier install bound that objs do not (RemoveOtherRole), waits for the
// CRDs to be established and, with waitReady, for the manager to be available.
func Run(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer, waitReady bool) ([]Change, error) {
	changes, err := Apply(ctx, c, objs)
	for _, ch := range changes {
		fmt.Fprintf(out, "%s %s\n", ch.Action, ch.Subject)
	}
	if err != nil {
		return changes, err
	}
	removed, err := RemoveOtherRole(ctx, c, objs)
	for _, r := range removed {
		fmt.Fprintf(out, "%s deleted\n", r)
	}
	if err != nil {
		return changes, err
	}
	n, err := WaitForCRDs(ctx, c, objs)
	if err != nil {
		return changes, fmt.Errorf("waiting for the CRDs to be established: %w", err)
	}
	fmt.Fprintf(out, "✔ %d CRDs established\n", n)
	if !waitReady {
		return changes, nil
	}
	if err := WaitForManager(ctx, c, objs); err != nil {
		return changes, fmt.Errorf("waiting for the manager Deployment to be available: %w", err)
	}
	fmt.Fprintln(out, "✔ gitsync is running")
	return changes, nil
}
