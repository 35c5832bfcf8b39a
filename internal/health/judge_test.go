package health

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// widget is a custom resource that kstatus calls Current whatever its status.phase says
// (no conditions, no observedGeneration).
func widget(phase string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"},
		"status":   map[string]any{"phase": phase},
	}}
}

func widgetApp(checks ...gitsyncv1.HealthCheck) *gitsyncv1.Application {
	a := &gitsyncv1.Application{}
	a.Spec.HealthChecks = checks
	return a
}

var widgetCheck = gitsyncv1.HealthCheck{APIVersion: "example.com/v1", Kind: "Widget",
	Current: "status.phase == 'Ready'", Failed: "status.phase == 'Failed'"}

// The judge of an Application: its CEL checks for their kind (which kstatus misjudges),
// kstatus for the others.
func TestJudge(t *testing.T) {
	g := NewWithT(t)
	j, err := For(widgetApp(widgetCheck))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(Kstatus(widget("Failed")).Status).To(Equal(Healthy), "kstatus misjudges the kind")
	g.Expect(j.Object(widget("Failed"))).To(Equal(Result{Status: Degraded, Reason: "Failed", Message: "health check: failed"}))
	g.Expect(j.Object(widget("Ready"))).To(Equal(Result{Status: Healthy, Reason: "Current", Message: "health check: current"}))
	g.Expect(j.Object(widget("Pending"))).To(Equal(Result{Status: Progressing, Reason: "InProgress", Message: "health check: in progress"}))

	other := widget("Failed")
	other.SetAPIVersion("example.com/v2")
	g.Expect(j.Judges(other.GroupVersionKind())).To(BeFalse())
	g.Expect(j.Object(other).Status).To(Equal(Healthy), "kstatus for a kind without a check")

	var none *Judge
	g.Expect(none.Object(widget("Failed")).Status).To(Equal(Healthy), "a nil judge is kstatus")
	noChecks, err := For(&gitsyncv1.Application{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(noChecks.Object(widget("Failed")).Status).To(Equal(Healthy))
}

// Kinds without a status are Healthy once applied, unless a CEL check judges them.
func TestHealthyOnceApplied(t *testing.T) {
	g := NewWithT(t)
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	var none *Judge
	g.Expect(none.HealthyOnceApplied(cm)).To(BeTrue())
	g.Expect(none.HealthyOnceApplied(deploy)).To(BeFalse())
	j, err := For(widgetApp(gitsyncv1.HealthCheck{APIVersion: "v1", Kind: "ConfigMap", Current: "data.ready == 'yes'"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(j.HealthyOnceApplied(cm)).To(BeFalse(), "a CEL check reads it")
}

// Checks that do not compile: the error names the check, and the judge falls back to
// kstatus for every kind.
func TestForInvalidChecks(t *testing.T) {
	g := NewWithT(t)
	j, err := For(widgetApp(gitsyncv1.HealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.phase =="}))
	g.Expect(err).To(MatchError(HavePrefix("spec.healthChecks[0] (Widget) current")))
	g.Expect(j.Object(widget("Failed")).Status).To(Equal(Healthy))
}

func TestHook(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Hook("Succeeded")).To(Equal(Healthy))
	g.Expect(Hook("Failed")).To(Equal(Degraded))
	g.Expect(Hook("Running")).To(Equal(Progressing))
}

// The compiled checks are cached by content, at most maxCached of them: Applications
// (or generations) without end do not grow it.
func TestCompiledChecksAreBounded(t *testing.T) {
	app := func(i int) *gitsyncv1.Application {
		a := &gitsyncv1.Application{}
		a.UID = types.UID(fmt.Sprint("uid-", i))
		a.Spec.HealthChecks = []gitsyncv1.HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget",
			Current: fmt.Sprintf("status.generation == %d", i)}}
		return a
	}
	first, err := compile(app(0))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := compile(app(0))
	if again != first {
		t.Error("the same checks were compiled twice")
	}
	for i := range 3 * maxCached {
		if _, err := compile(app(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := compiledChecks.Len(); n > maxCached {
		t.Fatalf("%d compilations cached, want at most %d", n, maxCached)
	}
}
