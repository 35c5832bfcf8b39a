package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// requestTimeout bounds every request to a remote API server (a watch is not bounded
// by it: client-go sets its own timeout on watches).
const requestTimeout = 30 * time.Second

// ProbeTimeout bounds a probe.
const ProbeTimeout = 10 * time.Second

// Probe asks the remote API server for /version with the kubeconfig's credentials and
// returns its gitVersion.
func Probe(ctx context.Context, t *Target) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	body, err := t.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("probing %s: %w", t.Config.Host, err)
	}
	v, err := parseVersion(body)
	if err != nil {
		return "", fmt.Errorf("probing %s: %w", t.Config.Host, err)
	}
	return v, nil
}

// Unreachable tells whether err says the API server could not be reached at all (no
// answer, refused or reset connection, a timeout, a dial the egress guard refused, or an
// answer that is not the API server's: 502, 503, 504) rather than that it answered with
// an error.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &opErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 502 || code == 503 || code == 504
	}
	return false
}
