package image

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadSecret reads a Secret as the image controllers do (checked by checker first) and
// returns the Ready=False reason a failure would give.
func ReadSecret(ctx context.Context, c client.Client, checker SecretChecker, ns, name string) (map[string][]byte, string, error) {
	r := &reconcilerBase{Client: c, APIReader: c, SecretAccess: checker}
	data, err := r.secretData(ctx, ns, name)
	if err != nil {
		return nil, secretReason(err), err
	}
	return data, "", nil
}
