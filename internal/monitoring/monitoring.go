// Package monitoring exports the Ready condition of gitsync's objects as Prometheus gauges, read from the cache at each scrape.
package monitoring

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ReadyMetric is 1 while an object's Ready condition is True, 0 while False, -1 while
// Unknown or absent; suspended objects are left out.
const ReadyMetric = "gitsync_resource_ready"

var readyDesc = prometheus.NewDesc(ReadyMetric,
	"Ready condition of GitRepositories and Applications: 1 True, 0 False, -1 Unknown (suspended objects are left out).",
	[]string{"kind", "namespace", "name", "reason"}, nil)

// Collector reports the Ready condition of every GitRepository and Application.
type Collector struct {
	reader atomic.Pointer[client.Reader]
}

// Default is registered with controller-runtime's registry; Runnable (or Observe) points it
// at a cluster.
var Default = &Collector{}

func init() {
	metrics.Registry.MustRegister(Default)
}

// Observe makes the collector read objects through the reader (a manager's cached
// client, so a scrape makes no API request). The last call wins.
func (c *Collector) Observe(reader client.Reader) { c.reader.Store(&reader) }

// Runnable observes reader while a manager runs it, on every replica (leader or not),
// and lets go of it when the manager stops: a stopped manager's cache is neither
// scraped nor kept in memory by the collector (a process that starts a new manager,
// tests and the benchmarks' restarts, would otherwise hold both managers' caches).
func (c *Collector) Runnable(reader client.Reader) manager.Runnable {
	return observer{c: c, reader: reader}
}

type observer struct {
	c      *Collector
	reader client.Reader
}

func (o observer) Start(ctx context.Context) error {
	p := &o.reader
	o.c.reader.Store(p)
	<-ctx.Done()
	o.c.reader.CompareAndSwap(p, nil)
	return nil
}

func (observer) NeedLeaderElection() bool { return false }

// Describe sends the metric's descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- readyDesc }

// Collect lists the objects and sends one gauge per object.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The objects are only read: a cache hands out its own copies, not deep copies of
	// every Application (a scrape of 1,000 of them would copy each inventory).
	repos := &gitsyncv1.GitRepositoryList{}
	if (*r).List(ctx, repos, client.UnsafeDisableDeepCopy) == nil {
		for i := range repos.Items {
			o := &repos.Items[i]
			if !o.Spec.Suspend {
				ch <- gauge(gitsyncv1.GitRepositoryKind, o.Namespace, o.Name, o.Status.Conditions)
			}
		}
	}
	apps := &gitsyncv1.ApplicationList{}
	if (*r).List(ctx, apps, client.UnsafeDisableDeepCopy) == nil {
		for i := range apps.Items {
			o := &apps.Items[i]
			if !o.Spec.Suspend {
				ch <- gauge(gitsyncv1.ApplicationKind, o.Namespace, o.Name, o.Status.Conditions)
			}
		}
	}
}

func gauge(kind, namespace, name string, conds []metav1.Condition) prometheus.Metric {
	value, reason := -1.0, ""
	for _, c := range conds {
		if c.Type != gitsyncv1.ReadyCondition {
			continue
		}
		reason = c.Reason
		switch c.Status {
		case metav1.ConditionTrue:
			value = 1
		case metav1.ConditionFalse:
			value = 0
		}
	}
	return prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, value, kind, namespace, name, reason)
}
