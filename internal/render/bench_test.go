package render

import (
	"context"
	"fmt"
	"testing"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// BenchmarkPostBuild200 measures what decryption and substitution add to a render of
// 200 Secrets and 200 ConfigMaps: the Secrets age-encrypted (one file each) and/or the
// ConfigMaps with three ${VAR} references each, rendered with spec.decryption and/or
// spec.postBuild, against the same 400 objects in plain text without either (baseline).
// The added time per render is the difference with the baseline.
func BenchmarkPostBuild200(b *testing.B) {
	recipient, keys := ageKeys(b)
	trees := map[string]string{}
	for _, name := range []string{"baseline", "decrypt", "substitute", "decrypt+substitute"} {
		trees[name] = b.TempDir()
	}
	for i := range 200 {
		secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s-%d\nstringData:\n  password: %s-%d\n  user: app\n", i, secretValue, i)
		enc := encrypt(b, "s.yaml", secret, recipient, "^(data|stringData)$")
		vars := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-%d\ndata:\n  cluster: ${CLUSTER_NAME}\n  region: ${REGION:=eu-west-1}\n  token: ${TOKEN}\n", i)
		plain := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-%d\ndata:\n  cluster: prod-1\n  region: eu-west-1\n  token: t\n", i)
		s, c := fmt.Sprintf("s-%03d.yaml", i), fmt.Sprintf("c-%03d.yaml", i)
		write(b, trees["baseline"], map[string]string{s: secret, c: plain})
		write(b, trees["decrypt"], map[string]string{s: enc, c: plain})
		write(b, trees["substitute"], map[string]string{s: secret, c: vars})
		write(b, trees["decrypt+substitute"], map[string]string{s: enc, c: vars})
	}
	postBuild := func(a *gitsyncv1.Application) {
		a.Spec.PostBuild = &gitsyncv1.PostBuild{Substitute: map[string]string{"CLUSTER_NAME": "prod-1", "TOKEN": "t"}}
	}
	apps := map[string]*gitsyncv1.Application{
		"baseline":           app(),
		"decrypt":            app(decrypting),
		"substitute":         app(postBuild),
		"decrypt+substitute": app(decrypting, postBuild),
	}
	cluster := withKeys(b, keys)
	for _, name := range []string{"baseline", "decrypt", "substitute", "decrypt+substitute"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := Render(context.Background(), apps[name], Source{Root: trees[name]}, cluster)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Objects) != 400 {
					b.Fatalf("%d objects", len(res.Objects))
				}
			}
		})
	}
}
