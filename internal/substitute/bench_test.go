package substitute

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkObjects200 substitutes two variables into 200 ConfigMaps, the issue's
// measure of the cost substitution adds to a sync.
func BenchmarkObjects200(b *testing.B) {
	vars := Merge(map[string]string{"CLUSTER_NAME": "prod-eu"}, Source{Secret: true, Data: map[string]string{"TOKEN": "s3cr3t"}})
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		objs := make([]*unstructured.Unstructured, 200)
		for i := range objs {
			objs[i] = obj(b, cm(fmt.Sprintf("  name: app-%d-${CLUSTER_NAME}\n  token: ${TOKEN}\n  region: ${REGION:=eu}\n", i)))
		}
		b.StartTimer()
		if err := Objects(objs, vars); err != nil {
			b.Fatal(err)
		}
	}
}
