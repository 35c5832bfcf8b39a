package config_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// The operator registers every metric gitsync exports (its controllers, the webhook
	// receiver, notifications, monitoring) with controller-runtime's registry.
	_ "github.com/gitsync-dev/gitsync/internal/operator"
)

var metricName = regexp.MustCompile(`\b(?:gitsync|controller_runtime|workqueue|rest_client)_[a-z0-9_]+`)

// monitoringExprs returns the PromQL of every rule and dashboard panel in config/monitoring.
func monitoringExprs(t *testing.T) []string {
	t.Helper()
	var exprs []string
	for _, o := range build(t, "monitoring") {
		switch o.GetKind() {
		case "PrometheusRule":
			groups, _, _ := unstructuredSlice(o.Object, "spec", "groups")
			for _, g := range groups {
				rules, _, _ := unstructuredSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					exprs = append(exprs, r.(map[string]any)["expr"].(string))
				}
			}
		case "ConfigMap":
			var dash struct {
				Panels []struct {
					Targets []struct{ Expr string } `json:"targets"`
				} `json:"panels"`
			}
			data := o.Object["data"].(map[string]any)["gitsync-dashboard.json"].(string)
			if err := json.Unmarshal([]byte(data), &dash); err != nil {
				t.Fatalf("dashboard JSON: %v", err)
			}
			for _, p := range dash.Panels {
				for _, target := range p.Targets {
					exprs = append(exprs, target.Expr)
				}
			}
		}
	}
	return exprs
}

func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		v = m[p]
	}
	s, ok := v.([]any)
	return s, ok, nil
}

// registered asks the registry whether a metric of that name exists: registering a
// descriptor with the name and a different help text fails exactly when it does.
func registered(name string) bool {
	probe := &probeCollector{desc: prometheus.NewDesc(name, "probe of the monitoring test", nil, nil)}
	if err := metrics.Registry.Register(probe); err != nil {
		return true
	}
	metrics.Registry.Unregister(probe)
	return false
}

type probeCollector struct{ desc *prometheus.Desc }

func (p *probeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p *probeCollector) Collect(chan<- prometheus.Metric)    {}

// missingMetrics returns the metric names used in exprs that gitsync does not export
// (a histogram's _bucket, _sum and _count series count as its name).
func missingMetrics(exprs []string) []string {
	seen := map[string]bool{}
	var missing []string
	for _, e := range exprs {
		for _, name := range metricName.FindAllString(e, -1) {
			if seen[name] {
				continue
			}
			seen[name] = true
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !registered(name) && !registered(base) {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// Every metric the PrometheusRule and the Grafana dashboard use exists in gitsync's registry.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	exprs := monitoringExprs(t)
	if len(exprs) < 10 {
		t.Fatalf("found only %d expressions in config/monitoring", len(exprs))
	}
	if missing := missingMetrics(exprs); len(missing) > 0 {
		t.Errorf("config/monitoring uses metrics gitsync does not export: %v", missing)
	}
	// The check itself: a metric that does not exist is reported, one that does is not.
	if got := missingMetrics([]string{`rate(gitsync_no_such_thing_total[5m]) + gitsync_resource_ready`}); len(got) != 1 || got[0] != "gitsync_no_such_thing_total" {
		t.Errorf("the check reported %v", got)
	}
	if _, err := os.Stat("monitoring/gitsync-dashboard.json"); err != nil {
		t.Fatal(err)
	}
}
