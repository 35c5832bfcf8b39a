package render

import (
	"context"
	"fmt"
	"testing"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// BenchmarkPostBuild200 measures what decryption and substitution add to a render: 200
// age-encrypted Secrets and 200 ConfigMaps with three ${VAR} references each, rendered
// with spec.decryption and spec.postBuild, against the same 400 objects in plain text
// without either (baseline). The added time per render is the difference.
func BenchmarkPostBuild200(b *testing.B) {
	recipient, keys := ageKeys(b)
	plain, encrypted := b.TempDir(), b.TempDir()
	for i := range 200 {
		secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s-%d\nstringData:\n  password: %s-%d\n  user: app\n", i, secretValue, i)
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-%d\ndata:\n  cluster: ${CLUSTER_NAME}\n  region: ${REGION:=eu-west-1}\n  token: ${TOKEN}\n", i)
		cmPlain := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-%d\ndata:\n  cluster: prod-1\n  region: eu-west-1\n  token: t\n", i)
		write(b, plain, map[string]string{fmt.Sprintf("s-%03d.yaml", i): secret, fmt.Sprintf("c-%03d.yaml", i): cmPlain})
		write(b, encrypted, map[string]string{
			fmt.Sprintf("s-%03d.yaml", i): encrypt(b, "s.yaml", secret, recipient, "^(data|stringData)$"),
			fmt.Sprintf("c-%03d.yaml", i): cm,
		})
	}
	post := app(decrypting, func(a *gitsyncv1.Application) {
		a.Spec.PostBuild = &gitsyncv1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "prod-1", "TOKEN": "t"}}
	})
	cluster := withKeys(b, keys)
	run := func(b *testing.B, a *gitsyncv1.Application, root string, c *Cluster) {
		for b.Loop() {
			res, err := Render(context.Background(), a, Source{Root: root}, c)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Objects) != 400 {
				b.Fatalf("%d objects", len(res.Objects))
			}
		}
	}
	b.Run("baseline", func(b *testing.B) { run(b, app(), plain, nil) })
	b.Run("decrypt+substitute", func(b *testing.B) { run(b, post, encrypted, cluster) })
}
