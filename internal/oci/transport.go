package oci

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Bounds of the registry's answers that are decoded whole (go-containerregistry alone
// reads a manifest of up to 100 MiB into memory). Blobs are bounded where they are read.
const (
	maxManifestBytes = 1 << 20
	maxTagPageBytes  = 4 << 20
)

// registryError names what failed; a 401 or 403 wraps ErrUnauthorized, a 404
// ErrRefNotFound.
func registryError(what string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: %w (HTTP %d)", what, ErrUnauthorized, te.StatusCode)
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", what, ErrRefNotFound)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}
