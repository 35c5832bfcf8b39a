// Package operatortest runs gitsync's whole operator against a test package's API server.
package operatortest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/apicount"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Start starts the operator (metrics off, checkouts under dir/storage) on env's API
// server; stop stops it and removes dir.
func Start(env *testenv.Env, dir string) (stop func(), err error) {
	mgr, err := operator.New(env.Config, env.Scheme, operator.Options{
		MetricsBindAddress: "0", StoragePath: filepath.Join(dir, "storage"), SkipNameValidation: true,
		DenyEgress: operator.NoEgressGuard, // the test servers are on loopback
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

// Run starts the operator with opts on env's API server, its requests counted by the
// returned Counter (metrics, probes and webhooks off, checkouts in a temporary directory,
// no egress guard (the test servers are on loopback), unless opts says otherwise). stop ends it as a killed replica would end: its leader
// lease, if any, is not released; t.Cleanup stops it too.
func Run(t testing.TB, env *testenv.Env, opts operator.Options) (counter *apicount.Counter, mgr manager.Manager, stop func()) {
	t.Helper()
	counter = apicount.New()
	cfg := rest.CopyConfig(env.Config)
	counter.Wrap(cfg)
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	if opts.StoragePath == "" {
		opts.StoragePath = t.TempDir()
	}
	if opts.DenyEgress == nil {
		opts.DenyEgress = operator.NoEgressGuard
	}
	opts.SkipNameValidation = true
	mgr, err := operator.New(cfg, env.Scheme, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("operator stopped: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return counter, mgr, stop
}
