package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// `gitsync get apps` has a WINDOW column when one of the Applications has sync windows:
// the state and how long it lasts; "-" for an Application without windows.
func TestGetWindowColumn(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 30, 9, 13, 0, 0, time.UTC)
	held := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "a"}}
	held.Spec.SyncWindows = []gitsyncv1.SyncWindow{{Kind: gitsyncv1.SyncWindowDeny, Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	held.Status.SyncWindow = &gitsyncv1.SyncWindowStatus{State: gitsyncv1.SyncWindowClosed, Until: &metav1.Time{Time: now.Add(47 * time.Minute)}}
	plain := &gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "a"}}

	var out bytes.Buffer
	printTable(&out, kindApp, []client.Object{held, plain}, true, false, false, now)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "READY", "SYNC", "HEALTH", "REVISION", "WINDOW", "AGE", "MESSAGE"}))
	g.Expect(strings.Fields(lines[1])[:6]).To(Equal([]string{"held", "Unknown", "-", "-", "-", "Closed(47m)"}))
	g.Expect(strings.Fields(lines[2])[:6]).To(Equal([]string{"plain", "Unknown", "-", "-", "-", "-"}))

	out.Reset()
	printTable(&out, kindApp, []client.Object{plain}, true, false, false, now)
	g.Expect(out.String()).NotTo(ContainSubstring("WINDOW"))
}
