package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

// pprofAddressEnv names the variable that, when set (e.g. 127.0.0.1:6060), makes
// `gitsync run` serve Go's profiles (/debug/pprof/: profile, heap, goroutine, trace…)
// on that address, for measuring the operator binary (bench/). Off by default; it has no
// flag on purpose: the endpoint has no authentication, so bind it to loopback only.
const pprofAddressEnv = "GITSYNC_PPROF_ADDRESS"

// servePprof serves the profiles on the address in $GITSYNC_PPROF_ADDRESS, if set, until
// the process ends.
func servePprof() error {
	addr := os.Getenv(pprofAddressEnv)
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", pprofAddressEnv, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ctrl.Log.WithName("setup").Info("serving Go profiles", "address", ln.Addr().String())
	go func() {
		if err := http.Serve(ln, mux); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ctrl.Log.WithName("setup").Error(err, "serving Go profiles")
		}
	}()
	return nil
}
