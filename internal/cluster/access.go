package cluster

import "context"

// SecretChecker says whether the operator may read a Secret for an object of namespace
// (in tenant mode: whether the namespace's tenant account may get it); the operator's
// is internal/controller/sources' SecretAccess.
type SecretChecker interface {
	CheckSecret(ctx context.Context, namespace, name string) error
}

// AccessError is a Cluster's kubeconfig Secret that the tenant check refused: it is not
// read. A RoleBinding that lets the namespace's account get the Secret lifts it.
type AccessError struct{ err error }

func (e *AccessError) Error() string { return e.err.Error() }
func (e *AccessError) Unwrap() error { return e.err }
