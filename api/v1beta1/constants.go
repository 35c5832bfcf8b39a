package v1beta1

// Condition types shared by both kinds.
const (
	// ReadyCondition is True when the last reconciliation succeeded.
	ReadyCondition = "Ready"
	// ReconcilingCondition is True while a reconciliation is in progress.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the object cannot make progress until its spec changes.
	StalledCondition = "Stalled"
	// HealthyCondition (Application) is True when every applied object is healthy.
	HealthyCondition = "Healthy"
)

// Condition reasons.
const (
	// SucceededReason: the reconciliation finished without error.
	SucceededReason = "Succeeded"
	// ProgressingReason: a reconciliation is under way.
	ProgressingReason = "Progressing"
	// SuspendedReason: spec.suspend is true; nothing is reconciled.
	SuspendedReason = "Suspended"
	// AuthenticationFailedReason: the Git server refused the credentials, or the SSH host key did not verify.
	AuthenticationFailedReason = "AuthenticationFailed"
	// RefNotFoundReason: the branch, tag, semver range or commit does not exist on the remote.
	RefNotFoundReason = "RefNotFound"
	// RefInvalidReason: spec.ref cannot be used (e.g. a semver range that does not parse).
	RefInvalidReason = "RefInvalid"
	// URLInvalidReason: spec.url cannot be parsed as a Git URL.
	URLInvalidReason = "URLInvalid"
	// FetchFailedReason: listing or fetching from the remote failed (network, server error, timeout).
	FetchFailedReason = "FetchFailed"
	// TooLargeReason: the fetch exceeded the GitRepository's spec.maxSize, or a checkout
	// would write more files or bytes than the operator allows (a tree that repeats one
	// blob many times).
	TooLargeReason = "TooLarge"
	// RenderLimitExceededReason: a render hit one of its worker's bounds (memory, CPU
	// time, wall-clock deadline, output size, files written); the message names the bound.
	RenderLimitExceededReason = "RenderLimitExceeded"
	// VerificationFailedReason: spec.verify is set and the revision fetched is not signed
	// by one of its keys (or the keys cannot be read); nothing of it is used.
	VerificationFailedReason = "VerificationFailed"
	// SecretNotFoundReason: the Secret named by spec.secretRef could not be read or is malformed.
	SecretNotFoundReason = "SecretNotFound"
	// StorageFailedReason: the checkout could not be written to the storage path.
	StorageFailedReason = "StorageFailed"
	// ArtifactNotReadyReason: the Application's source has no artifact yet.
	ArtifactNotReadyReason = "ArtifactNotReady"
	// BuildFailedReason: kustomize or YAML decoding of the path failed.
	BuildFailedReason = "BuildFailed"
	// ApplyFailedReason: the server-side dry-run or apply failed.
	ApplyFailedReason = "ApplyFailed"
	// PruneFailedReason: deleting objects that left Git failed, or was refused.
	PruneFailedReason = "PruneFailed"
	// PruneRefusedReason: a prune would have deleted a CustomResourceDefinition that
	// still has custom resources (see spec.pruneCRDs); nothing of it was deleted.
	PruneRefusedReason = "PruneRefused"
	// LimitAppliedReason (a Warning event): a spec field is beyond the operator's caps
	// (gitsync run --max-timeout, --min-interval, --max-artifact-size); the cap applies.
	LimitAppliedReason = "LimitApplied"
	// ObjectsMissingReason: objects of the revision just applied are not in the cluster.
	ObjectsMissingReason = "ObjectsMissing"
	// HealthCheckFailedReason: applied objects did not become healthy in time.
	HealthCheckFailedReason = "HealthCheckFailed"
	// DependencyNotReadyReason: an Application named in dependsOn is not Ready.
	DependencyNotReadyReason = "DependencyNotReady"
	// DriftDetectedReason: the Application's objects differ from the revision it applied
	// and selfHeal is false, so the drift is reported (status.drift), not corrected.
	DriftDetectedReason = "DriftDetected"
	// PruneSkippedReason: objects that left Git are still in the cluster because the sync
	// that applied the revision did not prune (a sync request with prune off), or because
	// another Application of the namespace that cannot be rendered might render them (the
	// prune fails closed); they stay in the inventory, and the next sync that prunes (for
	// a held-back prune, the next resync) removes them.
	PruneSkippedReason = "PruneSkipped"
	// AccessDeniedReason: the Application names a GitRepository (sourceRef.namespace) or
	// a dependency (dependsOn[].namespace) in another namespace, and the operator does
	// not allow cross-namespace references (gitsync run --allow-cross-namespace-refs).
	AccessDeniedReason = "AccessDenied"
	// SyncWindowClosedReason: spec.syncWindows hold a new revision back (outside every
	// allow window, or inside a deny window), or refused a requested sync (no window
	// that closes the Application has manualSync); status.syncWindow says until when.
	// Also the Warning event sent when a window first holds a revision.
	SyncWindowClosedReason = "SyncWindowClosed"
	// PartiallySyncedReason: a selective sync applied some objects of the revision
	// (status.selectiveSync names them); the rest waits for a full sync.
	PartiallySyncedReason = "PartiallySynced"
	// AwaitingSyncReason: with autoSync false, a newer revision of the source waits for a
	// sync request (gitsync reconcile app NAME); Ready is False until it is applied (and
	// Unknown before the first sync). What was applied before stays and is kept.
	AwaitingSyncReason = "AwaitingSync"
	// SyncWindowInvalidReason: an entry of spec.syncWindows does not parse (schedule,
	// duration or timeZone); new revisions wait until it is fixed.
	SyncWindowInvalidReason = "SyncWindowInvalid"
	// OrphanedReason (a Warning event): on deletion, objects the Application's identity
	// may no longer delete (its service account or RoleBinding is gone) were left in place.
	OrphanedReason = "Orphaned"
	// AttestationFailedReason (a Warning event): a sync succeeded but its signed
	// attestation could not be made or kept (gitsync run --attestation-key-secret); the
	// sync stands, and its history entry has no attestation.
	AttestationFailedReason = "AttestationFailed"
)

// Annotations and labels.
const (
	// RequestedAtAnnotation: setting it to a new value asks for a reconcile now.
	RequestedAtAnnotation = "gitsync.dev/requested-at"
	// RunHooksAnnotation: set to the same value as requested-at, the requested sync runs
	// the hooks again (`gitsync reconcile app NAME --hooks`); a request without it runs
	// them only for a revision they have not run for.
	RunHooksAnnotation = "gitsync.dev/run-hooks"
	// SyncPruneAnnotation: "true@<requested-at>" or "false@<requested-at>" prunes (or
	// does not) in the sync that request asks for, whatever spec.prune says (`gitsync
	// reconcile app NAME --prune=true|false`, the UI's sync option); later syncs follow
	// spec.prune again.
	SyncPruneAnnotation = "gitsync.dev/sync-prune"
	// SyncResourcesAnnotation: "<selector>,<selector>…@<requested-at>" makes the sync
	// requested at that value a selective sync: after a dry-run of the whole revision,
	// only the objects the selectors ([GROUP/]KIND[/NAMESPACE]/NAME) name are applied,
	// nothing is pruned, and the Application stays OutOfSync for the rest
	// (`gitsync sync app NAME --resource …`).
	SyncResourcesAnnotation = "gitsync.dev/sync-resources"
	// ApplicationLabel names the Application that manages an object.
	ApplicationLabel = "gitsync.dev/application"
	// ApplicationNamespaceLabel is the namespace of the Application that manages an object.
	ApplicationNamespaceLabel = "gitsync.dev/application-namespace"
	// FieldManager is the field manager of every apply gitsync makes.
	FieldManager = "gitsync"
	// Finalizer is set on Applications that prune on deletion.
	Finalizer = "gitsync.dev/finalizer"
	// PruneAnnotation set to PruneDisabled on an object keeps it when it leaves Git and
	// when its Application is deleted (Flux's kustomize.toolkit.fluxcd.io/prune: disabled
	// and Argo CD's argocd.argoproj.io/sync-options: Prune=false are honoured too).
	PruneAnnotation = "gitsync.dev/prune"
	// PruneDisabled is the value of PruneAnnotation that turns pruning off.
	PruneDisabled = "disabled"
	// ShardLabel ("0".."M-1") on a GitRepository, Application, Provider or Alert assigns
	// it to that shard of `gitsync run --shard N/M` instead of the hash of its
	// namespace/name; a value outside 0..M-1 is ignored.
	ShardLabel = "gitsync.dev/shard"
)

// Kinds.
const (
	GitRepositoryKind  = "GitRepository"
	HelmRepositoryKind = "HelmRepository"
	ApplicationKind    = "Application"
)
