// Package operatortest runs gitsync's whole operator against a test package's API server.
package operatortest

import (
	"context"
	"os"
	"path/filepath"

	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

// Start starts the operator (metrics off, checkouts under dir/storage) on env's API
// server; stop stops it and removes dir.
func Start(env *testenv.Env, dir string) (stop func(), err error) {
	mgr, err := operator.New(env.Config, env.Scheme, operator.Options{
		MetricsBindAddress: "0", StoragePath: filepath.Join(dir, "storage"), SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}, nil
}
