package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/health"
)

// SetJudge makes Health, HealthAfterApply and Wait judge objects with j (an
// Application's judge, health.For); without it they judge by kstatus alone.
func (m *Manager) SetJudge(j *health.Judge) { m.judge = j }

// Judge is the judge the Manager's health reads use (nil: kstatus alone).
func (m *Manager) Judge() *health.Judge { return m.judge }

// Health reads every entry's object (one GET each through the status reader) and
// judges it (health.Judge: the Application's CEL checks for their kinds, kstatus
// otherwise; not found is Missing). An error means an object could not be read
// (other than not found).
func (m *Manager) Health(ctx context.Context, entries []Entry) (*health.Summary, error) {
	objs, err := m.readStatuses(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("computing health: %w", err)
	}
	return health.Aggregate(objs), nil
}

// HealthAfterApply is Health for objects that were just applied: those of kinds without
// a status (ConfigMap, Secret, RBAC, ...) are Healthy without being read, the others are
// read as by Health. It saves one GET per such object on every sync; an object deleted
// afterwards is a matter for drift detection, not for this sync's health.
func (m *Manager) HealthAfterApply(ctx context.Context, entries []Entry) (*health.Summary, error) {
	var read []Entry
	var known []health.Object
	for _, e := range entries {
		gvk, err := e.GroupVersionKind()
		if err == nil && m.judge.HealthyOnceApplied(gvk) {
			known = append(known, health.Object{Subject: e.Subject(), Result: health.Result{Status: health.Healthy, Reason: "Current"}})
			continue
		}
		read = append(read, e)
	}
	objs, err := m.readStatuses(ctx, read)
	if err != nil {
		return nil, fmt.Errorf("computing health: %w", err)
	}
	return health.Aggregate(append(known, objs...)), nil
}

// Wait polls the entries' objects until every one is Healthy. It returns an error as
// soon as one is Degraded (naming the failed ones), or when timeout passes (naming the
// ones that are not Healthy and their state).
func (m *Manager) Wait(ctx context.Context, entries []Entry, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		pending []health.Object
		readErr error
	)
	for {
		objs, err := m.readStatuses(ctx, entries)
		if err == nil {
			var failed []health.Object
			pending = pending[:0]
			for _, o := range objs {
				switch o.Status {
				case health.Healthy:
				case health.Degraded:
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

func join(objs []health.Object) string {
	s := make([]string, len(objs))
	for i, o := range objs {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// readStatuses reads the objects of entries (concurrently) and judges them.
func (m *Manager) readStatuses(ctx context.Context, entries []Entry) ([]health.Object, error) {
	objs := make([]health.Object, len(entries))
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

func (m *Manager) readStatus(ctx context.Context, e Entry) (health.Object, error) {
	obj, err := e.object()
	if err != nil {
		return health.Object{}, err
	}
	s := health.Object{Subject: e.Subject()}
	err = m.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		s.Result = health.NotFound()
		return s, nil
	case err != nil:
		return s, fmt.Errorf("reading %s: %w", s.Subject, err)
	}
	s.Result = m.judge.Object(obj)
	return s, nil
}
