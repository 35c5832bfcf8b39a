package attest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkAttestSync measures what the sync step spends besides reading the objects:
// recording 500 applied Deployments, signing the statement and adding it to the
// ConfigMap; and what `gitsync verify` spends on checking it.
func BenchmarkAttestSync(b *testing.B) {
	der, _ := x509.MarshalPKCS8PrivateKey(ecKey(&testing.T{}))
	key, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]Object, 0, 500)
	for i := range 500 {
		d := deployment(fmt.Sprintf("nginx:%d", i), 2, "")
		d.SetName(fmt.Sprintf("web-%d", i))
		rec, err := Record(d)
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, rec)
	}
	s := Sync{Application: Ref{Namespace: "team", Name: "web"}, Revision: "main@sha1:0123456789012345678901234567890123456789", Objects: objs}
	var env []byte
	b.Run("record+sign+store", func(b *testing.B) {
		for b.Loop() {
			for i := range 500 {
				d := deployment("nginx:1", 2, "")
				d.SetName(fmt.Sprintf("web-%d", i))
				if _, err := Record(d); err != nil {
					b.Fatal(err)
				}
			}
			env, _, err = Make(context.Background(), key, s)
			if err != nil {
				b.Fatal(err)
			}
			if err := Add(&corev1.ConfigMap{}, env); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(compressedSize(env)), "stored-bytes")
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if _, err := Verify(context.Background(), key.PublicKey, env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
