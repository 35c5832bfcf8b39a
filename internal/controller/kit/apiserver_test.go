package kit

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// A watch that would resume from a resourceVersion while the API server is away is
// answered at once with 410 Gone (reason Expired), and the API server is looked at: its
// informer lists again, and that list (or a watch that starts with the current state)
// waits for the API server like any read.
func TestWrapExpiresWatchesThatWouldResume(t *testing.T) {
	g := NewWithT(t)
	api := &fakeAPI{}
	var probes atomic.Int32
	server := NewAPIServerProbe(func(ctx context.Context) error { probes.Add(1); return api.probe(ctx) }, 10*time.Millisecond)
	rt := server.Wrap(roundTripper(func(req *http.Request) (*http.Response, error) {
		if !api.up.Load() {
			return nil, errRefused
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	const base = "https://api.example/api/v1/namespaces/ns/configmaps?"

	get, _ := http.NewRequest(http.MethodGet, base+"watch=true&resourceVersion=230&allowWatchBookmarks=true", nil)
	answered := make(chan *http.Response, 1)
	go func() {
		if resp, err := rt.RoundTrip(get); err == nil {
			answered <- resp
		}
	}()
	var resp *http.Response
	g.Eventually(answered).WithTimeout(time.Second).Should(Receive(&resp), "the watch waits for the API server")
	g.Expect(resp.StatusCode).To(Equal(http.StatusGone))
	status := &metav1.Status{}
	g.Expect(json.NewDecoder(resp.Body).Decode(status)).To(Succeed())
	g.Expect(apierrors.IsResourceExpired(&apierrors.StatusError{ErrStatus: *status})).To(BeTrue())
	g.Eventually(probes.Load).WithTimeout(time.Second).Should(BeNumerically(">", 0), "the API server is looked at")

	for _, query := range []string{
		"limit=500&resourceVersion=0", // a list
		"watch=true&resourceVersion=230&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", // a list by watch
		"watch=true", // a watch from now
	} {
		done := make(chan *http.Response, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, base+query, nil)
			if resp, err := rt.RoundTrip(req); err == nil {
				done <- resp
			}
		}()
		g.Consistently(done).WithTimeout(100*time.Millisecond).ShouldNot(Receive(), query)
		api.up.Store(true)
		g.Eventually(done).WithTimeout(time.Second).Should(Receive(HaveField("StatusCode", http.StatusOK)), query)
		api.up.Store(false)
	}

	// With the API server there, the same watch goes through.
	api.up.Store(true)
	resp, err := rt.RoundTrip(get)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}
