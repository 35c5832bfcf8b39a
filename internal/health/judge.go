package health

import (
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitsync-dev/gitsync/internal/celhealth"
)

// Result is the health of one object.
type Result struct {
	Status Status
	// Message is the judge's explanation (kstatus's message, "health check: failed", a
	// CEL error).
	Message string
	// Reason is the judge's own word for it, for messages that name an object's state
	// (a wait's "Deployment/ns/web (InProgress: …)"): kstatus's status (Current,
	// InProgress, Failed, Terminating, NotFound, Unknown) or a CEL check's (Current,
	// InProgress, Failed, Unknown).
	Reason string
}

// NotFound is the Result of an object that is not in the cluster.
func NotFound() Result {
	return Result{Status: Missing, Reason: string(status.NotFoundStatus), Message: "not found"}
}

// Judge judges the objects of one Application: its spec.healthChecks for their kinds,
// kstatus for every other kind. A nil *Judge judges by kstatus alone.
type Judge struct {
	checks *celhealth.Checks
}

// Object judges obj as read from the cluster.
func (j *Judge) Object(obj *unstructured.Unstructured) Result {
	if j.Judges(obj.GroupVersionKind()) {
		st, msg := j.checks.Judge(obj)
		return Result{Status: ofCEL(st), Reason: string(st), Message: msg}
	}
	return Kstatus(obj)
}

// Judges tells whether a CEL check of the Application judges the kind.
func (j *Judge) Judges(gvk schema.GroupVersionKind) bool {
	return j != nil && j.checks.Has(gvk)
}

// HealthyOnceApplied tells whether an object of gvk just applied is Healthy without a
// read: kinds without a status, unless a CEL check judges them.
func (j *Judge) HealthyOnceApplied(gvk schema.GroupVersionKind) bool {
	return statusless[gvk.GroupKind()] && !j.Judges(gvk)
}

// Kstatus is obj's health by kstatus alone: Current is Healthy, InProgress and
// Terminating are Progressing, Failed is Degraded, NotFound is Missing, anything else
// (or an error computing it) Unknown.
func Kstatus(obj *unstructured.Unstructured) Result {
	res, err := status.Compute(obj)
	if err != nil {
		return Result{Status: Unknown, Reason: string(status.UnknownStatus), Message: err.Error()}
	}
	return Result{Status: ofKstatus(res.Status), Reason: string(res.Status), Message: res.Message}
}

func ofKstatus(s status.Status) Status {
	switch s {
	case status.CurrentStatus:
		return Healthy
	case status.InProgressStatus, status.TerminatingStatus:
		return Progressing
	case status.FailedStatus:
		return Degraded
	case status.NotFoundStatus:
		return Missing
	default:
		return Unknown
	}
}

func ofCEL(s celhealth.Status) Status {
	switch s {
	case celhealth.Current:
		return Healthy
	case celhealth.Failed:
		return Degraded
	case celhealth.InProgress:
		return Progressing
	default:
		return Unknown
	}
}

// statusless lists kinds that have no status: kstatus always finds them Current, so
// once applied they are Healthy while they exist.
var statusless = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}:      true,
	{Kind: "Secret"}:         true,
	{Kind: "ServiceAccount"}: true,
	{Kind: "LimitRange"}:     true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:              true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  true,
}

// Hook is the health of a hook of the last run by its result (status.hooks): Succeeded
// is Healthy, Failed Degraded, anything else (Running) Progressing.
func Hook(result string) Status {
	switch result {
	case "Succeeded":
		return Healthy
	case "Failed":
		return Degraded
	default:
		return Progressing
	}
}
