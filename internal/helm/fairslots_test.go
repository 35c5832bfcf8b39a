package helm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Issue 34, item 2: the render slots' scheduler, step by step. A step is "a1+" (a
// render a1 of namespace a asks for a slot) or "a1-" (a1 gives its slot back); want is
// the renders that hold a slot after each step, in the order they got it.
func TestSlotQueueIsFairPerNamespace(t *testing.T) {
	cases := []struct {
		name     string
		capacity int
		steps    []string
		want     [][]string
	}{{
		name:     "one namespace alone takes every slot at once, then first in first out",
		capacity: 2,
		steps:    []string{"a1+", "a2+", "a3+", "a4+", "a1-", "a2-"},
		want:     [][]string{{"a1"}, {"a2"}, nil, nil, {"a3"}, {"a4"}},
	}, {
		name:     "three looping renders of a hold the slots: b gets the first that frees",
		capacity: 2,
		steps:    []string{"a1+", "a2+", "a3+", "b1+", "a1-", "a2-"},
		want:     [][]string{{"a1"}, {"a2"}, nil, nil, {"b1"}, {"a3"}},
	}, {
		name:     "waiting namespaces are served round-robin",
		capacity: 1,
		steps:    []string{"a1+", "a2+", "a3+", "b1+", "b2+", "c1+", "a1-", "a2-", "b1-", "c1-", "a3-"},
		want:     [][]string{{"a1"}, nil, nil, nil, nil, nil, {"a2"}, {"b1"}, {"c1"}, {"a3"}, {"b2"}},
	}, {
		name:     "a namespace without a slot goes before one that holds one",
		capacity: 2,
		steps:    []string{"a1+", "b1+", "a2+", "a3+", "c1+", "b1-", "c1-", "a1-"},
		want:     [][]string{{"a1"}, {"b1"}, nil, nil, nil, {"c1"}, {"a2"}, {"a3"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			q := newSlotQueue(tc.capacity)
			waiters := map[string]*slotWaiter{}
			releases := map[string]func(){}
			for i, step := range tc.steps {
				id, ns := step[:len(step)-1], step[:1]
				if strings.HasSuffix(step, "+") {
					waiters[id] = q.enqueue(ns)
				} else {
					g.Expect(releases).To(HaveKey(id), "step %s: %s holds no slot", step, id)
					releases[id]()
					delete(releases, id)
				}
				var got []string
				for _, wid := range sortedKeys(waiters) {
					w := waiters[wid]
					select {
					case <-w.ready:
						got = append(got, wid)
						releases[wid] = q.releaser(w.ns)
						delete(waiters, wid)
					default:
					}
				}
				g.Expect(got).To(Equal(tc.want[i]), "after step %d (%s)", i, step)
				inUse, _ := q.stats()
				g.Expect(inUse).To(Equal(len(releases)))
			}
		})
	}
}

func sortedKeys(m map[string]*slotWaiter) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// A render that gives up waiting leaves the queue; a slot released twice counts once.
func TestSlotQueueWaiterGivesUp(t *testing.T) {
	g := NewWithT(t)
	q := newSlotQueue(1)
	release, err := q.acquire(context.Background(), "a")
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.acquire(ctx, "b")
		done <- err
	}()
	g.Eventually(func() map[string]int { _, w := q.stats(); return w }).Should(Equal(map[string]int{"b": 1}))
	cancel(errors.New("gave up"))
	g.Eventually(done).Should(Receive(MatchError("gave up")))
	release()
	release()
	inUse, waiting := q.stats()
	g.Expect(inUse).To(BeZero())
	g.Expect(waiting).To(BeEmpty())
	release, err = q.acquire(context.Background(), "c")
	g.Expect(err).NotTo(HaveOccurred())
	release()
}

// Issue 34, item 2, with real renders: three charts of one namespace that loop hold
// both render slots and a third waits; another namespace's chart asks for a slot after
// it, and gets the first slot that frees: it renders while the other two loops go on.
// Before, the slots were one channel served first come, first served: the third loop
// took the slot, and the other namespace's chart waited for all of them.
func TestRenderSlotsFairBetweenNamespaces(t *testing.T) {
	g := NewWithT(t)
	withLimits(t, Limits{Concurrent: 2, Timeout: 5 * time.Minute, MaxOps: 1 << 60, MaxSteps: 1 << 60})
	root := t.TempDir()
	writeChart(t, root, "loop", map[string]string{"templates/loop.yaml": "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}"})
	loop, err := LoadDir(root, root)
	g.Expect(err).NotTo(HaveOccurred())
	okRoot := t.TempDir()
	writeChart(t, okRoot, "ok", map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"})
	ok, err := LoadDir(okRoot, okRoot)
	g.Expect(err).NotTo(HaveOccurred())

	type result struct {
		name string
		err  error
	}
	results := make(chan result, 4)
	var cancels []context.CancelFunc
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
	})
	start := func(name, tenant string, c *chart.Chart) {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		go func() {
			_, err := Render(ctx, c, Options{ReleaseName: name, Namespace: tenant})
			results <- result{name, err}
		}()
	}
	waiting := func() map[string]int {
		_, slots, _ := currentLimits()
		_, w := slots.stats()
		return w
	}

	start("loop-1", "tenant-a", loop)
	start("loop-2", "tenant-a", loop)
	g.Eventually(RenderSlotsInUse).Should(Equal(2))
	start("loop-3", "tenant-a", loop)
	g.Eventually(waiting).Should(Equal(map[string]int{"tenant-a": 1}))
	start("other", "tenant-b", ok)
	g.Eventually(waiting).Should(Equal(map[string]int{"tenant-a": 1, "tenant-b": 1}))

	cancels[0]() // loop-1 ends
	var r result
	g.Eventually(results).WithTimeout(30 * time.Second).Should(Receive(&r))
	g.Expect(r.name).To(Equal("loop-1"))
	g.Eventually(results).WithTimeout(30 * time.Second).Should(Receive(&r))
	g.Expect(r.name).To(Equal("other"), "the other namespace renders first: %v", r.err)
	g.Expect(r.err).NotTo(HaveOccurred())
}
