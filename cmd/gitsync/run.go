package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/helm"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/shard"
)

type runOptions struct {
	kubeconfig        string
	denyEgress        string
	webhookSecretFile string
	attestationKey    string
	shard             string
	operator          operator.Options
	render            renderFlags
}

func newRunCommand() *cobra.Command {
	return newRunCommandWith(&runOptions{})
}

// newRunCommandWith binds the flags to o (tests set fields that have no flag).
func newRunCommandWith(o *runOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the operator against a cluster (kubeconfig: --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, in-cluster, ~/.kube/config")
	f.StringVar(&o.operator.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint; 0 turns it off")
	f.BoolVar(&o.operator.Metrics.Secure, "metrics-secure", true,
		"serve /metrics over HTTPS, only to bearer tokens the API server accepts and allows get on /metrics (ClusterRole gitsync-metrics-reader); plain HTTP to anyone otherwise")
	f.StringVar(&o.operator.Metrics.CertDir, "metrics-cert-dir", "", "directory holding tls.crt and tls.key for --metrics-secure; empty: a self-signed certificate made at start")
	f.StringVar(&o.operator.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	f.BoolVar(&o.operator.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles")
	f.StringVar(&o.operator.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader lease; default: the pod's namespace")
	f.StringVar(&o.operator.StoragePath, "storage-path", operator.DefaultStoragePath(), "directory for Git checkouts")
	f.IntVar(&o.operator.Concurrent, "concurrent", 4, "reconciles each controller runs at once")
	f.IntVar(&o.operator.MaxConcurrentPerNamespace, "max-concurrent-per-namespace", 0,
		"Application reconciles of one namespace that run at once while another namespace waits (alone, a namespace has every worker but one; a push or a sync request may take one more); 0 (default): no cap")
	f.Float32Var(&o.operator.KubeAPIQPS, "kube-api-qps", operator.DefaultKubeAPIQPS,
		"requests per second to the Kubernetes API, all clients together; negative: no client-side limit")
	f.IntVar(&o.operator.KubeAPIBurst, "kube-api-burst", operator.DefaultKubeAPIBurst, "requests to the Kubernetes API at once above --kube-api-qps")
	f.StringVar(&o.operator.WebhookBindAddress, "webhook-bind-address", ":9292", "address of the push webhook receiver (POST /hook/<provider>); 0 turns it off")
	f.StringVar(&o.operator.DefaultServiceAccount, "default-service-account", "",
		"service account that an Application without spec.serviceAccountName impersonates in its own namespace (least privilege); empty: the operator's own identity")
	f.BoolVar(&o.operator.SharedQueue, "shared-queue", false,
		"one work queue per controller for every namespace; by default each controller hands its work out round-robin over namespaces, so that one namespace's backlog delays another's requests by at most one reconcile per worker")
	f.BoolVar(&o.operator.CheckSecretAccess, "check-secret-access", true,
		"in tenant mode (--default-service-account), read a Secret that a GitRepository, HelmRepository or Provider names only when the namespace's tenant account may get it (SubjectAccessReview); false: Flux's namespace trust")
	f.BoolVar(&o.operator.AllowCrossNamespaceRefs, "allow-cross-namespace-refs", false,
		"let an Application's sourceRef and dependsOn name another namespace (refused with AccessDenied otherwise)")
	f.StringVar(&o.operator.UIBindAddress, "ui-bind-address", "", "serve the web UI read-only on this address (e.g. :9080), to bearer tokens the API server accepts, with their rights; off by default")
	f.StringVar(&o.shard, "shard", "", "reconcile only shard N of M (N/M, 0 <= N < M): the objects whose FNV-1a hash of namespace/name modulo M is N, or whose "+
		gitsyncv1.ShardLabel+" label is N; run one replica (or a leader-elected set) per shard")
	f.DurationVar(&o.operator.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's lease lasts without renewal (a dead leader is replaced after it)")
	f.DurationVar(&o.operator.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew its lease before it gives up leading")
	f.DurationVar(&o.operator.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to take the lease")
	f.StringVar(&o.denyEgress, "deny-egress", egress.FormatCIDRs(egress.DefaultDeny),
		"CIDRs (comma-separated) never dialled for a tenant: HelmRepository, chart and OCI URLs, Provider addresses, http(s) Git URLs, each redirect hop; "+
			"add the cluster's pod, service and node ranges; empty (--deny-egress=) turns the guard off")
	f.BoolVar(&o.operator.AllowFileURLs, "allow-file-urls", false, "let a GitRepository read a file:// URL on the operator's own disk (refused otherwise)")
	f.IntVar(&o.operator.RenderLimits.Concurrent, "max-concurrent-renders", helm.DefaultConcurrentRenders, "chart renders at once (others wait)")
	o.render.bind(f)
	f.IntVar(&o.operator.RenderLimits.MaxAbandoned, "max-abandoned-renders", helm.DefaultMaxAbandonedRenders,
		"chart renders past --render-timeout whose template loop cannot be stopped that may go on in the background without holding a render slot")
	f.Int64Var(&o.operator.RenderLimits.MaxDecompressed, "max-chart-decompressed-size", helm.DefaultMaxDecompressed,
		"the most bytes a chart may hold decompressed, vendored subcharts included")
	f.DurationVar(&o.operator.Caps.MaxTimeout, "max-timeout", time.Hour, "the longest timeout a spec may set (an apply, a hook, a wave, a health wait); longer ones are lowered to it (0: no limit)")
	f.DurationVar(&o.operator.Caps.MinInterval, "min-interval", 10*time.Second, "the shortest interval a spec may set; shorter ones are raised to it (0: no limit)")
	f.Int64Var(&o.operator.Caps.MaxArtifactSize, "max-artifact-size", 1<<30, "the most bytes a GitRepository fetch may download; a larger spec.maxSize, or 0 (no limit), is lowered to it (0: no limit)")
	// The CRDs convert with strategy None since their versions' schemas are equal: no
	// conversion webhook is served. The flags stay accepted (scripts, the v0.1.0 bundle).
	f.Int("conversion-port", 0, "deprecated, no effect: the CRDs need no conversion webhook")
	f.String("conversion-cert-dir", "", "deprecated, no effect: the CRDs need no conversion webhook")
	for _, name := range []string{"conversion-port", "conversion-cert-dir"} {
		_ = f.MarkDeprecated(name, "it has no effect: the CRDs convert with strategy None, without a webhook")
	}
	f.StringVar(&o.attestationKey, "attestation-key-secret", "",
		"NAMESPACE/NAME of a Secret holding a cosign key pair (cosign.key, cosign.password, cosign.pub): each successful sync is attested, signed with it (docs/guides/attestations.md); empty: no attestations")
	f.StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "file holding an operator-wide webhook secret that verifies deliveries for every repository")
	return cmd
}

func (o *runOptions) run(ctx context.Context) error {
	log := ctrl.Log.WithName("setup")
	sh, err := shard.Parse(o.shard)
	if err != nil {
		return fmt.Errorf("--shard: %w", err)
	}
	o.operator.Shard = sh
	if o.operator.RenderWorkers, err = o.render.options(o.operator.RenderLimits, ctrl.Log.WithName("render-workers")); err != nil {
		return err
	}
	o.operator.RenderLimits.Timeout = o.render.timeout
	if o.operator.DenyEgress, err = egress.ParseCIDRs(o.denyEgress); err != nil {
		return fmt.Errorf("--deny-egress: %w", err)
	}
	if o.attestationKey != "" {
		ns, name, ok := strings.Cut(o.attestationKey, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--attestation-key-secret: %q is not NAMESPACE/NAME", o.attestationKey)
		}
		o.operator.AttestationKeySecret = types.NamespacedName{Namespace: ns, Name: name}
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	if o.webhookSecretFile != "" {
		secret, err := os.ReadFile(o.webhookSecretFile)
		if err != nil {
			return fmt.Errorf("reading --webhook-secret-file: %w", err)
		}
		o.operator.WebhookSecret = secret
	}
	mgr, err := operator.New(cfg, nil, o.operator)
	if err != nil {
		return err
	}
	log.Info("starting gitsync", "host", cfg.Host, "storagePath", o.operator.StoragePath,
		"defaultServiceAccount", o.operator.DefaultServiceAccount, "allowCrossNamespaceRefs", o.operator.AllowCrossNamespaceRefs,
		"shard", sh.String(), "renderWorkers", o.render.workers, "renderMemoryLimit", o.render.memory, "denyEgress", egress.FormatCIDRs(o.operator.DenyEgress), "allowFileURLs", o.operator.AllowFileURLs)
	return mgr.Start(ctx)
}

// restConfig resolves the kubeconfig the usual way: the flag, then $KUBECONFIG, in-cluster,
// and ~/.kube/config (controller-runtime's order for the last three).
func (o *runOptions) restConfig() (*rest.Config, error) {
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", o.kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding a kubeconfig (KUBECONFIG=%q): %w", strings.TrimSpace(os.Getenv("KUBECONFIG")), err)
	}
	return cfg, nil
}
