// Package localcluster starts a local kube-apiserver + etcd (controller-runtime envtest)
// with gitsync's CRDs installed. Tests and `gitsync demo` use it; the binaries are built
// from Go modules by hack/setup-envtest.sh, since none can be downloaded here.
package localcluster

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitsync-dev/gitsync/internal/scheme"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gitsync-dev/gitsync/config"
)

// stopTimeout bounds each control plane process's graceful stop.
const stopTimeout = 5 * time.Second

// Cluster is a running local control plane.
type Cluster struct {
	env *envtest.Environment
	// certDir holds the API server's serving certificates; kept across RestartAPIServer
	// so that clients keep trusting it.
	certDir string
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Scheme knows the built-in kinds and gitsync's.
	Scheme *runtime.Scheme
	// reaper kills the control plane if this process ends without Stop (reaper.go);
	// guarded are the PIDs it would kill.
	reaper  *exec.Cmd
	guarded []int
}

// NewScheme is gitsync's scheme (internal/scheme).
func NewScheme() *runtime.Scheme { return scheme.New() }

// Options change what Start does; the zero Options is Start's.
type Options struct {
	// CRDDirectories, when set, hold the CRDs to install instead of gitsync's own (e.g.
	// an earlier release's config/crd/bases).
	CRDDirectories []string
	// AuditLog, when set, is a file the API server appends one JSON audit event
	// (level Metadata) to for every request that may write: create, update, patch,
	// delete, deletecollection.
	AuditLog string
	// AuditPolicy, when set with AuditLog, is the audit policy (YAML) instead of that one.
	AuditPolicy string
}

// Start starts etcd and kube-apiserver and installs the CRDs.
func Start() (*Cluster, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(o Options) (*Cluster, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	crds, err := config.CRDs()
	if o.CRDDirectories != nil {
		crds = nil
	} else if err != nil {
		return nil, fmt.Errorf("loading CRDs: %w", err)
	}
	// A certificate directory of our own (envtest removes and regenerates its own on every
	// stop), so that the API server can be restarted with the same serving certificate.
	certDir, err := os.MkdirTemp("", "gitsync-apiserver-")
	if err != nil {
		return nil, fmt.Errorf("creating the API server's certificate directory: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		CRDDirectoryPaths:     o.CRDDirectories,
		ErrorIfCRDPathMissing: true,
		// kube-apiserver's graceful shutdown can outlast envtest's 20 s under load; after
		// this it is killed.
		ControlPlaneStopTimeout: stopTimeout,
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		// envtest's 20 s is not enough for kube-apiserver on a loaded 2-core machine
		// (a parallel build): packages then fail before any test runs.
		env.ControlPlaneStartTimeout = 2 * time.Minute
	}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	if o.AuditLog != "" {
		policy := cmp.Or(o.AuditPolicy, auditPolicy)
		if err := auditWrites(env.ControlPlane.APIServer, certDir, o.AuditLog, policy); err != nil {
			_ = os.RemoveAll(certDir)
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting the local API server: %w", err)
	}
	// Tests create many objects quickly; the default client limits (5 qps) would throttle them.
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Cluster{env: env, certDir: certDir, Config: cfg, Scheme: NewScheme()}
	c.guard()
	return c, nil
}

// auditPolicy records, at level Metadata (who, verb, object; no bodies), every request
// that may write.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// auditWrites makes the API server write the events of policy (YAML) to path (JSON
// lines); the policy file goes in dir.
func auditWrites(s *envtest.APIServer, dir, path, policy string) error {
	policyFile := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	s.Configure().
		Set("audit-policy-file", policyFile).
		Set("audit-log-path", path).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return nil
}

// Stop stops the control plane and removes its data.
func (c *Cluster) Stop() error {
	c.unguard()
	err := c.env.Stop()
	return errors.Join(err, os.RemoveAll(c.certDir))
}

// RestartAPIServer stops kube-apiserver and starts it again on the same address with the
// same certificates, keeping etcd (and so every object) running; clients made before keep
// working once it is back. It returns when the new API server is healthy.
func (c *Cluster) RestartAPIServer() error {
	return c.RestartAPIServerAfter(nil)
}

// RestartAPIServerAfter is RestartAPIServer that calls down (when not nil) while
// kube-apiserver is stopped.
func (c *Cluster) RestartAPIServerAfter(down func()) error {
	apiServer := c.env.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting") {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	// A stop that timed out killed the process: wait until its port is free again.
	addr := net.JoinHostPort(apiServer.SecureServing.Address, apiServer.SecureServing.Port)
	for deadline := time.Now().Add(stopTimeout); ; {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for kube-apiserver's port: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if down != nil {
		down()
	}
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	c.guard() // the new kube-apiserver has another PID
	return nil
}

// KubeConfig returns a kubeconfig for a cluster admin of this control plane.
func (c *Cluster) KubeConfig() ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding a user: %w", err)
	}
	return user.KubeConfig()
}

// Assets returns the directory holding etcd and kube-apiserver: $KUBEBUILDER_ASSETS, or
// the output of hack/setup-envtest.sh found above the working directory (which builds
// them on first use and then reuses its cache).
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := findRepoRoot()
	if err != nil {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is unset and %w", err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "setup-envtest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running hack/setup-envtest.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "setup-envtest.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hack/setup-envtest.sh was not found above the working directory")
		}
		dir = parent
	}
}
