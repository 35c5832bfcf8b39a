package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operator"
	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// BenchmarkWebhookPushToApplied: a GitRepository polling every 10 minutes (so only the
// webhook explains a fast sync); 20 pushes, each changing a ConfigMap value; from the
// webhook's 202 to the new value read back from the API server. GITSYNC_BENCH_TRACE=1
// logs each push's requests: the operator's to the API server, and the Git server's.
func BenchmarkWebhookPushToApplied(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		trace := newPushTrace()
		cfg := operatorConfig(b)
		cfg.Wrap(trace.wrap)
		mgr, err := operator.New(cfg, env.Scheme, operator.Options{
			MetricsBindAddress: "0", HealthProbeBindAddress: "0", StoragePath: b.TempDir(),
			SkipNameValidation: true, WebhookBindAddress: addr, DenyEgress: operator.NoEgressGuard,
			RenderWorkers: renderWorkers(b),
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = mgr.Start(ctx) }()
		b.Cleanup(func() { cancel(); <-done })

		srv := gittest.NewServer(b, gittest.Options{Served: trace.gitServed})
		repo := srv.CreateRepo("app")
		cm := func(v int) map[string]string {
			return map[string]string{"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  value: \"%d\"\n", v)}
		}
		repo.Commit("main", "0", cm(0))
		ns := namespace(b)
		token := []byte("bench-token")
		c := env.Client
		must := func(err error) {
			if err != nil {
				b.Fatal(err)
			}
		}
		must(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: ns}, Data: map[string][]byte{"token": token}}))
		must(c.Create(ctx, &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Spec: gitsyncv1.GitRepositorySpec{
				URL: srv.HTTPURL("app"), Ref: &gitsyncv1.GitRepositoryRef{Branch: "main"},
				Interval:         &metav1.Duration{Duration: 10 * time.Minute},
				WebhookSecretRef: &gitsyncv1.LocalObjectReference{Name: "hook"},
			},
		}))
		must(c.Create(ctx, &gitsyncv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Spec:       gitsyncv1.ApplicationSpec{SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "app"}},
		}))
		waitAllReady(b, ns, []string{"app"}, 5*time.Minute)
		// The receiver listens once the manager runs.
		for {
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}

		body := []byte(`{"url": "` + srv.HTTPURL("app") + `", "ref": "refs/heads/main"}`)
		mac := hmac.New(sha256.New, token)
		mac.Write(body)
		signature := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		var latencies []time.Duration
		b.StartTimer()
		for i := 1; i <= 20; i++ {
			repo.Commit("main", fmt.Sprint(i), cm(i))
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hook/generic", bytes.NewReader(body))
			req.Header.Set("X-Signature", signature)
			resp, err := http.DefaultClient.Do(req)
			must(err)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Fatalf("webhook answered %d", resp.StatusCode)
			}
			start := time.Now()
			trace.begin()
			want := fmt.Sprint(i)
			got := &corev1.ConfigMap{}
			for {
				must(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pushed"}, got))
				if got.Data["value"] == want {
					break
				}
				if time.Since(start) > 30*time.Second {
					b.Fatalf("push %d not applied in 30s", i)
				}
				time.Sleep(2 * time.Millisecond)
			}
			latencies = append(latencies, time.Since(start))
			trace.add("the new value read back (the benchmark's reads every 2 ms not shown)", start)
			trace.end(b, fmt.Sprintf("push %d, from the webhook's 202", i))
		}
		b.StopTimer()
		p50, p95 := percentile(latencies, 0.5), percentile(latencies, 0.95)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
		b.Logf("20 pushes, webhook 202 -> value read back: p50 %v, p95 %v, max %v", p50, p95, percentile(latencies, 1))
	}
}
