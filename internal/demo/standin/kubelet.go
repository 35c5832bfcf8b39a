// Package standin sets the status that a kubelet and the built-in controllers would set
// (there is no kubelet in envtest): a Job finished, a Deployment available.
package standin

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FinishJob marks the Job ns/name Complete (succeeded) or Failed, as the Job controller would.
func FinishJob(ctx context.Context, c client.Client, ns, name string, succeeded bool) error {
	j := &unstructured.Unstructured{}
	j.SetGroupVersionKind(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j); err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status := map[string]any{"startTime": now}
	cond := func(t, reason string) map[string]any {
		return map[string]any{"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": reason}
	}
	if succeeded {
		status["succeeded"] = int64(1)
		status["completionTime"] = now
		status["conditions"] = []any{cond("SuccessCriteriaMet", "CompletionsReached"), cond("Complete", "CompletionsReached")}
	} else {
		status["failed"] = int64(1)
		status["conditions"] = []any{cond("FailureTarget", "BackoffLimitExceeded"), cond("Failed", "BackoffLimitExceeded")}
	}
	j.Object["status"] = status
	if err := c.Status().Update(ctx, j); err != nil {
		return fmt.Errorf("setting the status of Job %s/%s: %w", ns, name, err)
	}
	return nil
}

// MakeAvailable marks the Deployment ns/name available with all its replicas, as the
// Deployment controller would once its Pods run.
func MakeAvailable(ctx context.Context, c client.Client, ns, name string) error {
	d := &unstructured.Unstructured{}
	d.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return err
	}
	replicas, found, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	d.Object["status"] = map[string]any{
		"observedGeneration": d.GetGeneration(), "replicas": replicas, "updatedReplicas": replicas,
		"readyReplicas": replicas, "availableReplicas": replicas,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
		},
	}
	if err := c.Status().Update(ctx, d); err != nil {
		return fmt.Errorf("setting the status of Deployment %s/%s: %w", ns, name, err)
	}
	return nil
}
