package config_test

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/shard"
)

// The sharded install (kubectl apply -k config/sharded) is config/default with the
// Deployment turned into a StatefulSet whose pod N runs --shard N/M, M being its replicas:
// every shard has a pod and no two pods share one. A real API server accepts it.
func TestShardedInstall(t *testing.T) {
	g := NewWithT(t)
	objs := build(t, "sharded")
	kinds := map[string]int{}
	var replicas int
	var args []string
	var podIndexEnv string
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "StatefulSet" {
			continue
		}
		// kustomize's maps hold Go ints, which unstructured's Nested* helpers refuse.
		spec := o.Object["spec"].(map[string]any)
		replicas = spec["replicas"].(int)
		container := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		for _, a := range container["args"].([]any) {
			args = append(args, a.(string))
		}
		for _, e := range container["env"].([]any) {
			e := e.(map[string]any)
			if e["name"] == "POD_INDEX" {
				podIndexEnv = e["valueFrom"].(map[string]any)["fieldRef"].(map[string]any)["fieldPath"].(string)
			}
		}
	}
	g.Expect(kinds).To(HaveKeyWithValue("StatefulSet", 1))
	g.Expect(kinds).NotTo(HaveKey("Deployment"))
	g.Expect(podIndexEnv).To(Equal("metadata.labels['apps.kubernetes.io/pod-index']"))
	g.Expect(args).To(ContainElements("--leader-elect", "--default-service-account=gitsync-tenant"))

	var flag string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--shard="); ok {
			flag = v
		}
	}
	g.Expect(flag).NotTo(BeEmpty(), "no --shard in %v", args)
	g.Expect(replicas).To(BeNumerically(">", 1))
	for i := range replicas {
		// What the kubelet makes of $(POD_INDEX) in pod i.
		s, err := shard.Parse(strings.ReplaceAll(flag, "$(POD_INDEX)", strconv.Itoa(i)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s).To(Equal(shard.Shard{Index: i, Count: replicas}))
	}
	serverDryRun(t, objs)
}
