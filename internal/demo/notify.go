package demo

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/notify"
)

// notifyToken signs the demo's notifications (the demo's own, throwaway secret).
const notifyToken = "demo-notify-token"

// startNotifications starts a local receiver for the generic provider and creates, in
// the demo namespace (made here if missing), a Provider pointing at it and an Alert
// sending it every event of the demo; each delivery is printed with its verified
// signature. stop waits up to 5s for a first delivery, then stops the receiver.
func startNotifications(ctx context.Context, c client.Client, out io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	first := make(chan struct{})
	var once sync.Once
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "reading the body", http.StatusBadRequest)
			return
		}
		verified := "signature INVALID"
		if hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte(notify.Sign([]byte(notifyToken), body))) {
			verified = "signature verified"
		}
		var p notify.GenericPayload
		_ = json.Unmarshal(body, &p)
		msg, _, _ := strings.Cut(p.Message, "\n")
		fmt.Fprintf(out, "notification received (%s): %s/%s/%s %s [%s] %s\n", verified,
			p.InvolvedObject.Kind, p.InvolvedObject.Namespace, p.InvolvedObject.Name, p.Reason, p.Severity, msg)
		once.Do(func() { close(first) })
	})}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		select {
		case <-first:
		case <-time.After(5 * time.Second):
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}
	if err := createNotificationObjects(ctx, c, "http://"+ln.Addr().String()+"/notify"); err != nil {
		_ = srv.Close()
		return nil, err
	}
	fmt.Fprintf(out, "notifications of %s go to a local generic receiver at http://%s/notify (printed here)\n", Namespace, ln.Addr())
	return stop, nil
}

func createNotificationObjects(ctx context.Context, c client.Client, address string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-notify", Namespace: Namespace},
		StringData: map[string]string{"token": notifyToken},
	}
	provider := &gitsyncv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-receiver", Namespace: Namespace},
		Spec: gitsyncv1.ProviderSpec{Type: gitsyncv1.ProviderGeneric, Address: address,
			SecretRef: &gitsyncv1.LocalObjectReference{Name: secret.Name}},
	}
	alert := &gitsyncv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: Namespace},
		Spec: gitsyncv1.AlertSpec{
			ProviderRef: gitsyncv1.LocalObjectReference{Name: provider.Name},
			EventSources: []gitsyncv1.EventSource{
				{Kind: gitsyncv1.GitRepositoryKind, Name: "*"}, {Kind: gitsyncv1.ApplicationKind, Name: "*"},
			},
			Summary: "gitsync demo",
		},
	}
	for _, o := range []client.Object{secret, provider, alert} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// The Alert must be in the manager's cache before the first events are routed.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c.Get(ctx, client.ObjectKeyFromObject(alert), &gitsyncv1.Alert{}) == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the demo Alert did not reach the cache")
}

// lockedWriter serialises writes from the demo and the receiver.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
