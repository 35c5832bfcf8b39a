package phase

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/apply"
	"github.com/gitsync-dev/gitsync/internal/health"
)

func (r *Runner) progress(ctx context.Context, format string, args ...any) {
	if r.Progress != nil {
		r.Progress(ctx, fmt.Sprintf(format, args...))
	}
}

// waitEnd is when a wait stops: at the run's deadline or, with Runner.Yield, when the
// call yields. A wait carried over from the call that yielded (carried) looks once; the
// first wait that starts in this call sets when the call yields.
func (x *run) waitEnd(carried bool) time.Time {
	end := x.deadline()
	if x.r.Yield > 0 {
		at := x.r.now()
		if !carried {
			if x.yieldAt.IsZero() {
				x.yieldAt = at.Add(x.r.Yield)
			}
			at = x.yieldAt
		}
		if at.Before(end) {
			end = at
		}
	}
	return end
}

// pause sleeps until the next look (delay, or until end, for a last look then); it
// tells whether the wait is over: end passed, or ctx is done.
func (x *run) pause(ctx context.Context, end time.Time, delay time.Duration) (over bool) {
	left := end.Sub(x.r.now())
	if left <= 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return true
	case <-time.After(min(delay, left)):
		return false
	}
}

// timedOut tells whether a wait that is over ran out of the run's time, rather than
// yielding: without Yield every end is a time-out.
func (x *run) timedOut() bool {
	return x.r.Yield <= 0 || !x.r.now().Before(x.deadline())
}

// waitHealthy waits until every object is Healthy; a Degraded object fails at once.
// It returns errWaiting when the call yields first.
func (x *run) waitHealthy(ctx context.Context, label string, objs []*unstructured.Unstructured, carried bool) error {
	r := x.r
	var pending []*unstructured.Unstructured
	for _, o := range objs {
		if !r.Judge.HealthyOnceApplied(o.GroupVersionKind()) {
			pending = append(pending, o)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	end := x.waitEnd(carried)
	var lastMsg string
	for delay := firstPoll; ; delay = nextPoll(delay) {
		var still []*unstructured.Unstructured
		for _, o := range pending {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				if ctx.Err() != nil {
					break
				}
				still = append(still, o)
				lastMsg = fmt.Sprintf("%s: %v", apply.Subject(o), err)
				continue
			}
			judged := r.Judge.Object(live)
			switch judged.Status {
			case health.Healthy:
			case health.Degraded:
				return fmt.Errorf("%s: %s is degraded: %s", label, apply.Subject(o), judged.Message)
			default:
				still = append(still, o)
				lastMsg = fmt.Sprintf("%s (%s: %s)", apply.Subject(o), judged.Status, judged.Message)
			}
		}
		if len(still) == 0 {
			return nil
		}
		if len(still) != len(pending) || delay == firstPoll {
			r.progress(ctx, "%s: waiting for %s", label, waitingFor(still, lastMsg))
		}
		pending = still
		if x.pause(ctx, end, delay) {
			if !x.timedOut() {
				return errWaiting
			}
			return fmt.Errorf("%s: timed out after %s waiting for %s", label, r.timeout(), lastMsg)
		}
	}
}

// waitingFor names what a wait is for: the last object seen not ready, with its message.
func waitingFor(objs []*unstructured.Unstructured, last string) string {
	s := last
	if len(objs) > 1 {
		s += fmt.Sprintf(" and %d more", len(objs)-1)
	}
	return s
}

// waitHook waits until the hook is Healthy (a Job Complete, a Pod Succeeded: kstatus
// Current) or Degraded (Failed), or the run's time is out; it returns errWaiting when
// the call yields first. A hook carried over from the call that yielded must still be
// this Application's (it is found by the name status.hooks kept).
func (x *run) waitHook(ctx context.Context, phase string, obj *unstructured.Unstructured, carried bool) (result, message string, err error) {
	r := x.r
	end := x.waitEnd(carried)
	subject := obj.GetKind() + "/" + obj.GetName()
	r.progress(ctx, "%s: waiting for %s", phase, subject)
	var last string
	for delay := firstPoll; ; delay = nextPoll(delay) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case apierrors.IsNotFound(err):
			return HookFailed, "deleted before it finished", nil
		case err != nil:
			last = err.Error()
		case carried && !r.ownHook(live):
			return HookFailed, "replaced by an object that is not a hook of this Application", nil
		default:
			judged := r.Judge.Object(live)
			switch judged.Status {
			case health.Healthy:
				return HookSucceeded, judged.Message, nil
			case health.Degraded:
				return HookFailed, judged.Message, nil
			}
			last = judged.Message
		}
		if x.pause(ctx, end, delay) {
			if !x.timedOut() {
				return HookRunning, last, errWaiting
			}
			return HookFailed, fmt.Sprintf("timed out after %s (%s)", r.timeout(), last), nil
		}
	}
}

// Polls start fast (a wave or hook often finishes at once) and slow down to once a second.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = time.Second
)

func nextPoll(d time.Duration) time.Duration {
	if d *= 2; d > maxPoll {
		return maxPoll
	}
	return d
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 5 * time.Minute
}
