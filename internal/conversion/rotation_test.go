package conversion

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/api/v1beta1"
)

// handshake opens a new TLS connection to the webhook as the API server would: trusting
// only the CA in the CRD's caBundle, for the name "localhost". It returns a digest of
// the certificate served.
func handshake(port int) ([32]byte, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: CRDs[0]}, crd); err != nil {
		return [32]byte{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) {
		return [32]byte{}, fmt.Errorf("no CA in the caBundle of %s", crd.Name)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		return [32]byte{}, err
	}
	defer conn.Close()
	return sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw), nil
}

// With certificates valid for 3 s and renewed 1.5 s before they expire, objects are
// read and written through both versions for 12 s while the certificate is renewed
// several times: no request fails, and every new connection (trusting the CRDs' CA
// only) is served a certificate that has not expired.
func TestCertificateRotationFailsNoRequest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	s := start(t, ns, Options{CertValidity: 3 * time.Second, RenewBefore: 1500 * time.Millisecond, CheckInterval: 200 * time.Millisecond})

	repo := &gitsyncv1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec: gitsyncv1.GitRepositorySpec{URL: "https://git.example.com/a.git"}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	app := application(ns, "app")
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())

	var requests, failures, handshakes int
	served := map[[32]byte]bool{}
	fail := func(what string, err error) {
		if err != nil {
			failures++
			t.Logf("%s: %v", what, err)
		}
	}
	for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		a := &gitsyncv1.Application{}
		fail("get v1alpha1", env.Client.Get(ctx, client.ObjectKeyFromObject(app), a))
		fail("get v1beta1", env.Client.Get(ctx, client.ObjectKeyFromObject(app), &v1beta1.Application{}))
		fail("list v1alpha1", env.Client.List(ctx, &gitsyncv1.GitRepositoryList{}, client.InNamespace(ns)))
		patch := client.MergeFrom(&gitsyncv1.GitRepository{})
		fail("patch v1alpha1", env.Client.Patch(ctx, &gitsyncv1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo", Annotations: map[string]string{gitsyncv1.RequestedAtAnnotation: time.Now().String()}},
		}, patch))
		requests += 4
		sum, err := handshake(s.port)
		fail("handshake", err)
		handshakes++
		if err == nil {
			served[sum] = true
		}
	}
	t.Logf("%d requests and %d new connections while %d certificates were served; %d failed", requests, handshakes, len(served), failures)
	g.Expect(failures).To(BeZero())
	g.Expect(len(served)).To(BeNumerically(">=", 4), "the certificate was not renewed several times")
}
