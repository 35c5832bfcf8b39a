package operator

import (
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/limits"
	"github.com/gitsync-dev/gitsync/internal/renderworker"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

// Options configure the operator. Zero values take the defaults of `gitsync run`.
type Options struct {
	// MetricsBindAddress serves /metrics; "0" turns it off.
	MetricsBindAddress string
	// Metrics says whether /metrics is served authenticated (metrics.go).
	Metrics MetricsServing
	// HealthProbeBindAddress serves /healthz and /readyz; "0" or "" turns it off.
	HealthProbeBindAddress string
	LeaderElection         bool
	// LeaderElectionNamespace is where the lease lives; in a cluster, the pod's namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader election
	// (controller-runtime's 15s, 10s and 2s when zero).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Shard is the part of the GitRepositories, Applications, Providers and Alerts this
	// replica reconciles (gitsync run --shard N/M); the zero Shard is all of them. Each
	// shard elects its own leader.
	Shard shard.Shard
	// StoragePath holds the checkouts.
	StoragePath string
	// Concurrent is the number of reconciles each controller runs at once.
	Concurrent int
	// MaxConcurrentPerNamespace, when set, caps the Application reconciles of one
	// namespace that run at once while another waits, so that one tenant cannot take
	// every worker; 0: no cap.
	MaxConcurrentPerNamespace int
	// SharedQueue gives each controller one queue for every namespace (controller-runtime's
	// priority queue) instead of the default fair queue per namespace served round-robin
	// (kit.FairQueue), which keeps one tenant's backlog from delaying another's requests.
	SharedQueue bool
	// KubeAPIQPS and KubeAPIBurst limit the requests of all the operator's clients
	// together; zero takes DefaultKubeAPIQPS and DefaultKubeAPIBurst, a negative
	// KubeAPIQPS turns the client-side limit off.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// GCInterval is how often unused checkouts are removed.
	GCInterval time.Duration
	// SkipNameValidation allows several managers in one process (benchmarks).
	SkipNameValidation bool
	// WebhookBindAddress serves the push webhooks (POST /hook/<provider>); "0" or ""
	// turns the receiver off.
	WebhookBindAddress string
	// WebhookSecret, when set, verifies deliveries for every repository (admin secret).
	WebhookSecret []byte
	// DefaultServiceAccount is impersonated, in its own namespace, by every Application
	// without spec.serviceAccountName; empty: such Applications apply with the
	// operator's identity.
	DefaultServiceAccount string
	// AllowCrossNamespaceRefs lets an Application's sourceRef and dependsOn name another
	// namespace; refused (Ready=False, AccessDenied) when false.
	AllowCrossNamespaceRefs bool
	// AttestationKeySecret names the Secret (cosign.key, cosign.password, cosign.pub)
	// whose key signs an attestation of each successful sync; the zero name: none.
	AttestationKeySecret types.NamespacedName
	// UIBindAddress serves the web UI read-only; "" or "0" (the default) turns it off.
	UIBindAddress string
	// DenyEgress are the address ranges never dialled for a tenant (HelmRepository,
	// chart and OCI URLs, Provider addresses, http(s) Git URLs, each redirect hop). nil
	// takes egress.DefaultDeny (loopback, link-local, unspecified); an empty, non-nil
	// list (NoEgressGuard, `--deny-egress=`) turns the guard off, as tests and the demo
	// on loopback need.
	DenyEgress []netip.Prefix
	// AllowFileURLs lets a GitRepository name a file:// URL (the operator's own disk);
	// refused (ErrURLInvalid) when false.
	AllowFileURLs bool
	// RenderLimits bound every chart render of the process (helm.SetLimits); zero
	// fields take helm's defaults.
	RenderLimits helm.Limits
	// CheckSecretAccess, in tenant mode (DefaultServiceAccount set), reads a Secret that
	// a GitRepository, HelmRepository or Provider names only when the namespace's tenant
	// account may get it (SubjectAccessReview; docs/security.md).
	CheckSecretAccess bool
	// RenderWorkers, when set, renders every Application in bounded worker processes of
	// the gitsync binary (renderworker; `gitsync run` sets it); nil renders in process,
	// as tests in one process and `gitsync run --render-workers=0` do.
	RenderWorkers *renderworker.Options
	// Caps bound what a tenant's spec may ask for: timeouts, intervals, fetch sizes
	// (gitsync run --max-timeout, --min-interval, --max-artifact-size); zero: none.
	Caps limits.Caps
}

// NoEgressGuard is the DenyEgress of an operator without an egress guard.
var NoEgressGuard = []netip.Prefix{}

// EgressGuard is the guard opts ask for (nil: none).
func (opts Options) EgressGuard() *egress.Guard {
	if opts.DenyEgress == nil {
		return egress.New(egress.DefaultDeny)
	}
	return egress.New(opts.DenyEgress)
}

// DefaultStoragePath is where checkouts go when --storage-path is not given.
func DefaultStoragePath() string { return filepath.Join(os.TempDir(), "gitsync") }
