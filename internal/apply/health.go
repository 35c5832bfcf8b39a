package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Health is the aggregated health of a set of objects.
type Health struct {
	// Status is the worst status of the objects (one of the HealthStatus constants of
	// api/v1alpha1): Healthy is best, then Progressing, Unknown, Missing, Degraded.
	Status string
	// Message names the least healthy object and its kstatus message.
	Message string
	// Objects maps each object's subject ("Kind/namespace/name") to its status.
	Objects map[string]string
}

// objectStatus is the kstatus of one object.
type objectStatus struct {
	Subject string
	Status  status.Status
	Message string
}

func (s objectStatus) String() string {
	if s.Message == "" {
		return fmt.Sprintf("%s (%s)", s.Subject, s.Status)
	}
	return fmt.Sprintf("%s (%s: %s)", s.Subject, s.Status, s.Message)
}

// healthOf maps a kstatus status to a health status.
func healthOf(s status.Status) string {
	switch s {
	case status.CurrentStatus:
		return gitsyncv1.HealthStatusHealthy
	case status.InProgressStatus, status.TerminatingStatus:
		return gitsyncv1.HealthStatusProgressing
	case status.FailedStatus:
		return gitsyncv1.HealthStatusDegraded
	case status.NotFoundStatus:
		return gitsyncv1.HealthStatusMissing
	default:
		return gitsyncv1.HealthStatusUnknown
	}
}

// healthRank orders health statuses from best (0) to worst.
var healthRank = map[string]int{
	gitsyncv1.HealthStatusHealthy:     0,
	gitsyncv1.HealthStatusProgressing: 1,
	gitsyncv1.HealthStatusUnknown:     2,
	gitsyncv1.HealthStatusMissing:     3,
	gitsyncv1.HealthStatusDegraded:    4,
}

// aggregate computes the worst-wins health of objs; among equally bad objects the
// first one is named.
func aggregate(objs []objectStatus) *Health {
	h := &Health{Status: gitsyncv1.HealthStatusHealthy, Objects: make(map[string]string, len(objs))}
	worst, unhealthy := -1, 0
	for i, o := range objs {
		s := healthOf(o.Status)
		h.Objects[o.Subject] = s
		if s != gitsyncv1.HealthStatusHealthy {
			unhealthy++
		}
		if worst < 0 || healthRank[s] > healthRank[h.Status] {
			worst, h.Status = i, s
		}
	}
	switch {
	case len(objs) == 0:
		h.Message = "no objects"
	case unhealthy == 0:
		h.Message = fmt.Sprintf("all %d objects are healthy", len(objs))
	default:
		w := objs[worst]
		h.Message = w.Subject + ": " + w.Message
		if w.Message == "" {
			h.Message = w.Subject + ": " + string(w.Status)
		}
		if unhealthy > 1 {
			h.Message += fmt.Sprintf(" (%d more objects not healthy)", unhealthy-1)
		}
	}
	return h
}

// Health reads every entry's object (one GET each through the status reader) and
// computes its kstatus: Current is Healthy, InProgress and Terminating are
// Progressing, Failed is Degraded, NotFound is Missing, anything else Unknown.
// An error means an object could not be read (other than not found).
func (m *Manager) Health(ctx context.Context, entries []Entry) (*Health, error) {
	objs, err := m.readStatuses(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("computing health: %w", err)
	}
	return aggregate(objs), nil
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

// HealthAfterApply is Health for objects that were just applied: those of kinds without
// a status (ConfigMap, Secret, RBAC, ...) are Healthy without being read, the others are
// read as by Health. It saves one GET per such object on every sync; an object deleted
// afterwards is a matter for drift detection, not for this sync's health.
func (m *Manager) HealthAfterApply(ctx context.Context, entries []Entry) (*Health, error) {
	var read []Entry
	var known []objectStatus
	for _, e := range entries {
		gvk, err := e.GroupVersionKind()
		if err == nil && m.HealthyOnceApplied(gvk) {
			known = append(known, objectStatus{Subject: e.Subject(), Status: status.CurrentStatus})
			continue
		}
		read = append(read, e)
	}
	objs, err := m.readStatuses(ctx, read)
	if err != nil {
		return nil, fmt.Errorf("computing health: %w", err)
	}
	return aggregate(append(known, objs...)), nil
}

// Wait polls the entries' objects until every one is Current (kstatus). It returns an
// error as soon as one is Failed (naming the failed ones), or when timeout passes
// (naming the ones that are not Current and their status).
func (m *Manager) Wait(ctx context.Context, entries []Entry, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		pending []objectStatus
		readErr error
	)
	for {
		objs, err := m.readStatuses(ctx, entries)
		if err == nil {
			var failed []objectStatus
			pending = pending[:0]
			for _, o := range objs {
				switch o.Status {
				case status.CurrentStatus:
				case status.FailedStatus:
					failed = append(failed, o)
				default:
					pending = append(pending, o)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("waiting for objects to be ready: failed: %s", join(failed))
			}
			if len(pending) == 0 {
				return nil
			}
		} else if ctx.Err() == nil {
			readErr = err // transient: try again
		}

		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("waiting for objects to be ready: %w", ctx.Err())
			}
			if pending == nil && readErr != nil {
				return fmt.Errorf("timed out after %s waiting for objects to be ready: %w", timeout, readErr)
			}
			return fmt.Errorf("timed out after %s waiting for objects to be ready: %s", timeout, join(pending))
		case <-time.After(m.pollInterval):
		}
	}
}

func join(objs []objectStatus) string {
	s := make([]string, len(objs))
	for i, o := range objs {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// readStatuses reads the objects of entries (concurrently) and computes their kstatus.
func (m *Manager) readStatuses(ctx context.Context, entries []Entry) ([]objectStatus, error) {
	objs := make([]objectStatus, len(entries))
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	sem := make(chan struct{}, m.concurrency)
	for i, e := range entries {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			objs[i], errs[i] = m.readStatus(ctx, e)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return objs, nil
}

func (m *Manager) readStatus(ctx context.Context, e Entry) (objectStatus, error) {
	obj, err := e.object()
	if err != nil {
		return objectStatus{}, err
	}
	s := objectStatus{Subject: e.Subject()}
	err = m.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		s.Status, s.Message = status.NotFoundStatus, "not found"
		return s, nil
	case err != nil:
		return s, fmt.Errorf("reading %s: %w", s.Subject, err)
	}
	s.Status, s.Message = m.objectStatus(obj)
	return s, nil
}
