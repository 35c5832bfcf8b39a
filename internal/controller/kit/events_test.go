package kit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// A Warning whose note lists 100 objects (about 5,000 characters) recorded through the
// controllers' recorder is stored by the API server, cut at a line to at most 1,024
// bytes and ending with how many lines were left out. Through the manager's recorder
// alone the API server rejected it ("can have at most 1024 characters") and it was lost.
func TestLongEventNoteIsStoredShortened(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sock-shop", Namespace: ns}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())

	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	lines := make([]string, 100)
	for i := range lines {
		lines[i] = fmt.Sprintf("apps/v1/Deployment sock-shop/carts-%03d: field is immutable", i)
	}
	note := strings.Join(lines, "\n")
	g.Expect(len(note)).To(BeNumerically(">", 5000))
	EventRecorder(mgr).Eventf(cm, nil, corev1.EventTypeWarning, "ApplyFailed", "Apply", "%s", note)

	var stored eventsv1.Event
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		stored = list.Items[0]
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(stored.Reason).To(Equal("ApplyFailed"))
	g.Expect(stored.Regarding.Name).To(Equal("sock-shop"))
	g.Expect(len(stored.Note)).To(BeNumerically("<=", MaxEventNote))
	g.Expect(stored.Note).To(HavePrefix(lines[0] + "\n" + lines[1] + "\n"))
	kept := strings.Split(stored.Note, "\n")
	g.Expect(kept[len(kept)-1]).To(Equal(fmt.Sprintf("… and %d more lines", 100-(len(kept)-1))))
	g.Expect(kept[len(kept)-2]).To(Equal(lines[len(kept)-2]))
}

// BoundNote keeps a short note, keeps whole lines of a long one, and cuts a single long
// line at a character boundary.
func TestBoundNote(t *testing.T) {
	g := NewWithT(t)
	g.Expect(BoundNote("a\nb", 10)).To(Equal("a\nb"))
	ten := strings.Repeat("0123456789\n", 9) + "0123456789" // 10 lines, 109 bytes
	g.Expect(BoundNote(ten, 109)).To(Equal(ten))
	g.Expect(BoundNote(ten, 60)).To(Equal("0123456789\n0123456789\n0123456789\n… and 7 more lines"))

	long := strings.Repeat("é", 1000) // 2,000 bytes on one line
	cut := BoundNote(long, MaxEventNote)
	g.Expect(len(cut)).To(BeNumerically("<=", MaxEventNote))
	g.Expect(utf8.ValidString(cut)).To(BeTrue())
	g.Expect(cut).To(HaveSuffix("é…"))

	two := BoundNote(long+"\nsecond", MaxEventNote)
	g.Expect(len(two)).To(BeNumerically("<=", MaxEventNote))
	g.Expect(two).To(HaveSuffix("…\n… and 1 more line"))
}
