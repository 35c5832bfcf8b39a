package v1beta1

import "testing"

func TestPrunes(t *testing.T) {
	for _, c := range []struct {
		name      string
		spec      bool
		requested string
		handled   string
		option    string
		want      bool
	}{
		{name: "spec only", spec: true, want: true},
		{name: "on for the pending request", requested: "2", handled: "1", option: "true@2", want: true},
		{name: "off for the pending request", spec: true, requested: "2", handled: "1", option: "false@2", want: false},
		{name: "request handled: spec again", requested: "2", handled: "2", option: "true@2", want: false},
		{name: "an older request's option", spec: true, requested: "3", handled: "2", option: "false@2", want: true},
		{name: "not a boolean", requested: "2", option: "yes@2", want: false},
		{name: "no separator", spec: true, requested: "2", option: "false", want: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := &Application{Spec: ApplicationSpec{Prune: c.spec}}
			app.Status.LastHandledReconcileAt = c.handled
			app.Annotations = map[string]string{RequestedAtAnnotation: c.requested, SyncPruneAnnotation: c.option}
			if got := app.Prunes(); got != c.want {
				t.Errorf("Prunes() = %v, want %v", got, c.want)
			}
		})
	}
}
