package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/renderworker"
)

// renderFlags are `gitsync run`'s --render-* flags: the worker processes every
// Application renders in.
type renderFlags struct {
	workers          int
	memory, output   string
	timeout, cpu     time.Duration
	noNetworkIsolate bool
}

func (r *renderFlags) bind(f *pflag.FlagSet) {
	f.IntVar(&r.workers, "render-workers", renderworker.DefaultWorkers,
		"render worker processes kept warm: every Application renders in one, bounded by the kernel (0 renders in the operator's own process: not for a shared cluster)")
	f.StringVar(&r.memory, "render-memory-limit", binaryQuantity(renderworker.DefaultMemory), "the memory (data segment) a render worker may use; a render over it fails alone with reason RenderLimitExceeded")
	f.DurationVar(&r.timeout, "render-timeout", renderworker.DefaultTimeout, "the most one render may take (lowered to an Application's spec.timeout)")
	f.DurationVar(&r.cpu, "render-cpu-limit", 0, "the CPU time one render may use (0: --render-timeout)")
	f.StringVar(&r.output, "render-max-output", binaryQuantity(renderworker.DefaultMaxOutput), "the most one render may return (its objects, encoded)")
	f.BoolVar(&r.noNetworkIsolate, "render-share-network", false, "keep render workers in the operator's network namespace (by default each gets one of its own where the kernel allows)")
}

// options are the pool's options (nil: render in process), with the chart limits the
// workers apply to the templates they run.
func (r *renderFlags) options(limits helm.Limits, log logr.Logger) (*renderworker.Options, error) {
	if r.workers <= 0 {
		return nil, nil
	}
	memory, err := quantity("--render-memory-limit", r.memory)
	if err != nil {
		return nil, err
	}
	output, err := quantity("--render-max-output", r.output)
	if err != nil {
		return nil, err
	}
	return &renderworker.Options{
		Workers:            r.workers,
		Bounds:             renderworker.Bounds{Memory: memory},
		Timeout:            r.timeout,
		CPU:                r.cpu,
		MaxOutput:          output,
		NoNetworkNamespace: r.noNetworkIsolate,
		Log:                log,
		Args: []string{
			// The worker's own template deadline comes after the pool's, which stops the
			// process (a template that loops without a function call cannot be stopped
			// otherwise).
			"--chart-render-timeout", (r.timeout + 10*time.Second).String(),
			"--max-chart-decompressed-size", strconv.FormatInt(limits.MaxDecompressed, 10),
		},
	}, nil
}

// binaryQuantity is n bytes as a flag's default shows it (512Mi).
func binaryQuantity(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

func quantity(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive quantity (e.g. 512Mi)", flag, s)
	}
	return q.Value(), nil
}
