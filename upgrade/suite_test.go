package upgrade

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gitsync-dev/gitsync/internal/localcluster"
	"github.com/gitsync-dev/gitsync/internal/testutil/gitsyncproc"
	"github.com/gitsync-dev/gitsync/internal/testutil/release"
	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var (
	env *testenv.Env
	// previous is the release the upgrade starts from (the last one in hack/releases),
	// built from its commit; binary is the working tree's gitsync.
	previous *release.Release
	binary   string
	// kubeconfig reaches env as an admin, for the operators; auditLog is the API
	// server's record of every write request.
	kubeconfig, auditLog, workDir string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	if workDir, err = os.MkdirTemp("", "gitsync-upgrade-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("GITSYNC_UPGRADE_KEEP") == "" {
		defer os.RemoveAll(workDir)
	} else {
		fmt.Fprintln(os.Stderr, "upgrade: keeping the operators' logs and the audit log in", workDir)
	}
	root, err := release.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	version, err := release.Latest(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	previous, err = release.Build(root, version, workDir)
	if previous != nil {
		defer func() {
			if err := previous.Remove(); err != nil {
				fmt.Fprintln(os.Stderr, "upgrade:", err)
			}
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade: building the previous release:", err)
		return 1
	}
	if binary, err = gitsyncproc.Build(workDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	auditLog = filepath.Join(workDir, "audit.log")
	opts := localcluster.Options{CRDDirectories: []string{previous.CRDDirectory()}, AuditLog: auditLog}
	return testenv.RunWith(m, &env, opts, func() (func(), error) {
		data, err := env.KubeConfig()
		if err != nil {
			return nil, err
		}
		kubeconfig = filepath.Join(workDir, "kubeconfig")
		return func() {}, os.WriteFile(kubeconfig, data, 0o600)
	})
}
