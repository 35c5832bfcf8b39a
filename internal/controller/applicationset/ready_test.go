package applicationset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestNotReady(t *testing.T) {
	app := func(name string, status metav1.ConditionStatus, reason string) gitsyncv1.Application {
		a := gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if status != "" {
			a.Status.Conditions = []metav1.Condition{{Type: gitsyncv1.ReadyCondition, Status: status, Reason: reason}}
		}
		return a
	}
	live := []gitsyncv1.Application{
		app("a", metav1.ConditionTrue, "Succeeded"),
		app("b", metav1.ConditionFalse, "BuildFailed"),
		app("c", metav1.ConditionUnknown, "Progressing"),
		app("d", "", ""),
		app("e", metav1.ConditionFalse, "HealthCheckFailed"),
		app("f", metav1.ConditionFalse, "SyncWindowClosed"),
		app("g", metav1.ConditionFalse, "DriftDetected"),
		app("old", metav1.ConditionFalse, "BuildFailed"), // no longer generated: pruned
	}
	cases := []struct {
		generated []string
		want      string
	}{
		{[]string{"a", "c", "d", "new"}, ""},
		{[]string{"a", "b", "c"}, "1 of 3 Applications not Ready: b (BuildFailed)"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"},
			"4 of 7 Applications not Ready: b (BuildFailed), e (HealthCheckFailed), f (SyncWindowClosed) and 1 more"},
	}
	for _, c := range cases {
		if got := notReady(c.generated, live); got != c.want {
			t.Errorf("%v: %q; want %q", c.generated, got, c.want)
		}
	}
}
