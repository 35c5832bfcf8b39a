package kit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var errRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// fakeAPI is an API server that answers or not, as the test says.
type fakeAPI struct{ up atomic.Bool }

func (f *fakeAPI) probe(context.Context) error {
	if f.up.Load() {
		return nil
	}
	return errRefused
}

// What failed while the API server was away is retried as soon as it answers again,
// with its backoff reset; nothing is looked at while nothing fails.
func TestRetriesWhenTheAPIServerIsBack(t *testing.T) {
	g := NewWithT(t)
	api := &fakeAPI{}
	var probes atomic.Int32
	server := NewAPIServerProbe(func(ctx context.Context) error { probes.Add(1); return api.probe(ctx) }, 10*time.Millisecond)
	retries := NewRetries(time.Second, time.Minute, server)
	item := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "repo"}}
	for range 5 {
		retries.When(item)
	}
	g.Expect(retries.NumRequeues(item)).To(Equal(5))
	g.Consistently(retries.again).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())

	api.up.Store(true)
	var e any
	g.Eventually(retries.again).WithTimeout(time.Second).Should(Receive(&e))
	g.Expect(retries.NumRequeues(item)).To(BeZero(), "the backoff starts over")

	// At rest (nothing failing), no look at the API server.
	n := probes.Load()
	time.Sleep(100 * time.Millisecond)
	g.Expect(probes.Load()).To(Equal(n))
}

// A GET that finds the API server away waits for it and is sent again; a write fails
// at once (its reconcile is retried).
func TestWrapHoldsReadsUntilTheAPIServerIsBack(t *testing.T) {
	g := NewWithT(t)
	api := &fakeAPI{}
	server := NewAPIServerProbe(api.probe, 10*time.Millisecond)
	var sent atomic.Int32
	rt := server.Wrap(roundTripper(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		if !api.up.Load() {
			return nil, errRefused
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))

	post, _ := http.NewRequest(http.MethodPost, "https://api.example/apis/x", http.NoBody)
	_, err := rt.RoundTrip(post)
	g.Expect(errors.Is(err, syscall.ECONNREFUSED)).To(BeTrue())

	done := make(chan *http.Response, 1)
	go func() {
		get, _ := http.NewRequest(http.MethodGet, "https://api.example/api/v1/configmaps?watch=true", nil)
		resp, err := rt.RoundTrip(get)
		if err == nil {
			done <- resp
		}
	}()
	g.Consistently(done).WithTimeout(150 * time.Millisecond).ShouldNot(Receive())
	api.up.Store(true)
	var resp *http.Response
	g.Eventually(done).WithTimeout(time.Second).Should(Receive(&resp))
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))

	// A read whose context ends while it waits fails with its error.
	api.up.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example/api/v1/configmaps", nil)
	_, err = rt.RoundTrip(get)
	g.Expect(err).To(HaveOccurred())
}
