package v1beta1

// Ordered sync: sync waves and hooks (docs/guides/ordered-sync.md).
const (
	// SyncWaveAnnotation orders a sync: waves apply in ascending order (default 0),
	// each after the one before is healthy.
	SyncWaveAnnotation = "gitsync.dev/sync-wave"
	// HookAnnotation makes an object a hook of a phase: PreSync, Sync, PostSync,
	// SyncFail, or Skip (never applied). Several may be listed, comma-separated.
	HookAnnotation = "gitsync.dev/hook"
	// HookDeletePolicyAnnotation says when a hook is deleted: BeforeHookCreation
	// (default), HookSucceeded, HookFailed; several may be listed, comma-separated.
	HookDeletePolicyAnnotation = "gitsync.dev/hook-delete-policy"

	// Argo CD's and Helm's annotations, read too so that repositories move over unchanged.
	ArgoSyncWaveAnnotation         = "argocd.argoproj.io/sync-wave"
	ArgoHookAnnotation             = "argocd.argoproj.io/hook"
	ArgoHookDeletePolicyAnnotation = "argocd.argoproj.io/hook-delete-policy"
	HelmHookAnnotation             = "helm.sh/hook"
	HelmHookWeightAnnotation       = "helm.sh/hook-weight"
	HelmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"

	// HookApplicationLabel and HookApplicationNamespaceLabel mark the hooks an
	// Application created. They are not the owner labels: hooks are neither in the
	// inventory nor watched for drift, and a prune never selects them.
	HookApplicationLabel          = "gitsync.dev/hook-application"
	HookApplicationNamespaceLabel = "gitsync.dev/hook-application-namespace"
)

// Hook phases.
const (
	HookPreSync  = "PreSync"
	HookSync     = "Sync"
	HookPostSync = "PostSync"
	HookSyncFail = "SyncFail"
	HookSkip     = "Skip"
)

// Hook delete policies.
const (
	HookDeleteBeforeCreation = "BeforeHookCreation"
	HookDeleteSucceeded      = "HookSucceeded"
	HookDeleteFailed         = "HookFailed"
)
