package demo

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubelet "github.com/gitsync-dev/gitsync/internal/demo/standin"
)

// playKubelet stands in for the kubelet and the built-in controllers the local API server
// lacks, for the demo's namespaces only: a Deployment becomes Available and a Job
// completes a second after they appear, so that health, waves and hooks show as they
// would in a cluster.
func playKubelet(ctx context.Context, c client.Client, namespaces ...string) {
	seen := map[string]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		now := time.Now()
		due := func(key string) bool {
			first, ok := seen[key]
			if !ok {
				seen[key] = now
				return false
			}
			return now.Sub(first) >= time.Second
		}
		for _, ns := range namespaces {
			deployments := &appsv1.DeploymentList{}
			if err := c.List(ctx, deployments, client.InNamespace(ns)); err == nil {
				for _, d := range deployments.Items {
					if d.Status.ObservedGeneration == d.Generation && available(d) {
						continue
					}
					key := "deploy/" + ns + "/" + d.Name + "/" + string(rune(d.Generation))
					if due(key) {
						_ = kubelet.MakeAvailable(ctx, c, ns, d.Name)
					}
				}
			}
			jobs := &batchv1.JobList{}
			if err := c.List(ctx, jobs, client.InNamespace(ns)); err == nil {
				for _, j := range jobs.Items {
					if j.Status.CompletionTime != nil || j.DeletionTimestamp != nil {
						continue
					}
					if due("job/" + ns + "/" + j.Name + "/" + string(j.UID)) {
						_ = kubelet.FinishJob(ctx, c, ns, j.Name, true)
					}
				}
			}
		}
	}
}

func available(d appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return d.Status.AvailableReplicas >= 1
		}
	}
	return false
}
