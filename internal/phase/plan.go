// Package phase plans an ordered sync: it sorts a render into hooks (PreSync, Sync,
// PostSync, SyncFail) and sync waves from gitsync's, Argo CD's and Helm's annotations.
package phase

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// Plan is the order of one sync.
type Plan struct {
	// Waves are the main set (the inventory), in ascending wave order. Cluster
	// definitions (CRDs, Namespaces) are in the first wave whatever their annotation.
	Waves []Wave
	// Hooks of each phase, ordered by weight, then kind and name.
	PreSync, Sync, PostSync, SyncFail []Hook
	// Skipped are objects annotated Skip (or Helm test hooks): never applied.
	Skipped []*unstructured.Unstructured
}

// Wave is a group of main-set objects applied together.
type Wave struct {
	Number  int
	Objects []*unstructured.Unstructured
}

// Hook is one hook object of one phase.
type Hook struct {
	Object *unstructured.Unstructured
	Phase  string
	// Weight orders the hooks of a phase (sync-wave, or helm.sh/hook-weight).
	Weight int
	// DeletePolicies holds the policies that apply (BeforeHookCreation when none given).
	DeletePolicies []string
}

// HasPolicy tells whether the hook has the delete policy p.
func (h Hook) HasPolicy(p string) bool {
	for _, x := range h.DeletePolicies {
		if x == p {
			return true
		}
	}
	return false
}

// Objects returns the main set, every wave in order.
func (p *Plan) Objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, w := range p.Waves {
		out = append(out, w.Objects...)
	}
	return out
}

// Hooks returns the hooks of every phase.
func (p *Plan) Hooks() []Hook {
	return append(append(append(append([]Hook{}, p.PreSync...), p.Sync...), p.PostSync...), p.SyncFail...)
}

// Ordered tells whether the plan needs more than one step: hooks, or several waves.
func (p *Plan) Ordered() bool {
	return len(p.Waves) > 1 || len(p.Hooks()) > 0
}

// New sorts objs into a Plan. It fails, naming the object, on an annotation it cannot
// read (a wave that is not an integer, an unknown hook phase or delete policy).
func New(objs []*unstructured.Unstructured) (*Plan, error) {
	p := &Plan{}
	waves := map[int][]*unstructured.Unstructured{}
	for _, o := range objs {
		phases, weight, policies, err := hookOf(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject(o), err)
		}
		if len(phases) == 1 && phases[0] == gitsyncv1.HookSkip {
			p.Skipped = append(p.Skipped, o)
			continue
		}
		if len(phases) > 0 {
			for _, ph := range phases {
				h := Hook{Object: o, Phase: ph, Weight: weight, DeletePolicies: policies}
				switch ph {
				case gitsyncv1.HookPreSync:
					p.PreSync = append(p.PreSync, h)
				case gitsyncv1.HookSync:
					p.Sync = append(p.Sync, h)
				case gitsyncv1.HookPostSync:
					p.PostSync = append(p.PostSync, h)
				case gitsyncv1.HookSyncFail:
					p.SyncFail = append(p.SyncFail, h)
				}
			}
			continue
		}
		wave, err := waveOf(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject(o), err)
		}
		waves[wave] = append(waves[wave], o)
	}
	numbers := make([]int, 0, len(waves))
	for n := range waves {
		numbers = append(numbers, n)
	}
	sort.Ints(numbers)
	// Cluster definitions go first, whatever their wave: later waves' objects and
	// hooks may need them (a CR of a CRD, an object in a new Namespace).
	var first []*unstructured.Unstructured
	for _, n := range numbers {
		kept := waves[n][:0]
		for _, o := range waves[n] {
			if utils.IsClusterDefinition(o) {
				first = append(first, o)
			} else {
				kept = append(kept, o)
			}
		}
		waves[n] = kept
	}
	for i, n := range numbers {
		objs := waves[n]
		if i == 0 {
			objs = append(first, objs...)
		}
		if len(objs) > 0 {
			p.Waves = append(p.Waves, Wave{Number: n, Objects: objs})
		}
	}
	for _, hs := range []*[]Hook{&p.PreSync, &p.Sync, &p.PostSync, &p.SyncFail} {
		sortHooks(*hs)
	}
	return p, nil
}

// WaveOf returns the wave of a main-set object (0 when not annotated).
func WaveOf(o *unstructured.Unstructured) int {
	w, _ := waveOf(o)
	return w
}

func waveOf(o *unstructured.Unstructured) (int, error) {
	a := o.GetAnnotations()
	for _, key := range []string{gitsyncv1.SyncWaveAnnotation, gitsyncv1.ArgoSyncWaveAnnotation} {
		if v, ok := a[key]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("annotation %s: %q is not an integer", key, v)
			}
			return n, nil
		}
	}
	return 0, nil
}

// hookOf reads the hook annotations: gitsync's first, then Argo CD's, then Helm's.
func hookOf(o *unstructured.Unstructured) (phases []string, weight int, policies []string, err error) {
	a := o.GetAnnotations()
	switch {
	case a[gitsyncv1.HookAnnotation] != "":
		phases, err = ownPhases(gitsyncv1.HookAnnotation, a[gitsyncv1.HookAnnotation])
		if err == nil {
			policies, err = ownPolicies(gitsyncv1.HookDeletePolicyAnnotation, a[gitsyncv1.HookDeletePolicyAnnotation])
		}
		if err == nil {
			weight, err = waveOf(o)
		}
	case a[gitsyncv1.ArgoHookAnnotation] != "":
		phases, err = ownPhases(gitsyncv1.ArgoHookAnnotation, a[gitsyncv1.ArgoHookAnnotation])
		if err == nil {
			policies, err = ownPolicies(gitsyncv1.ArgoHookDeletePolicyAnnotation, a[gitsyncv1.ArgoHookDeletePolicyAnnotation])
		}
		if err == nil {
			weight, err = waveOf(o)
		}
	case a[gitsyncv1.HelmHookAnnotation] != "":
		phases, err = helmPhases(a[gitsyncv1.HelmHookAnnotation])
		if err == nil {
			policies, err = helmPolicies(a[gitsyncv1.HelmHookDeletePolicyAnnotation])
		}
		if err == nil && a[gitsyncv1.HelmHookWeightAnnotation] != "" {
			v := a[gitsyncv1.HelmHookWeightAnnotation]
			if weight, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				err = fmt.Errorf("annotation %s: %q is not an integer", gitsyncv1.HelmHookWeightAnnotation, v)
			}
		}
	default:
		return nil, 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, err
	}
	if len(policies) == 0 {
		policies = []string{gitsyncv1.HookDeleteBeforeCreation}
	}
	return phases, weight, policies, nil
}

func ownPhases(key, value string) ([]string, error) {
	var out []string
	for _, v := range splitList(value) {
		switch v {
		case gitsyncv1.HookPreSync, gitsyncv1.HookSync, gitsyncv1.HookPostSync, gitsyncv1.HookSyncFail:
			out = appendOnce(out, v)
		case gitsyncv1.HookSkip:
			return []string{gitsyncv1.HookSkip}, nil
		default:
			return nil, fmt.Errorf("annotation %s: unsupported hook %q (PreSync, Sync, PostSync, SyncFail or Skip)", key, v)
		}
	}
	return out, nil
}

func ownPolicies(key, value string) ([]string, error) {
	var out []string
	for _, v := range splitList(value) {
		switch v {
		case gitsyncv1.HookDeleteBeforeCreation, gitsyncv1.HookDeleteSucceeded, gitsyncv1.HookDeleteFailed:
			out = appendOnce(out, v)
		default:
			return nil, fmt.Errorf("annotation %s: unsupported delete policy %q (BeforeHookCreation, HookSucceeded or HookFailed)", key, v)
		}
	}
	return out, nil
}

// helmPhases maps Helm's hook events: pre-install/pre-upgrade → PreSync,
// post-install/post-upgrade → PostSync. Test hooks, and events that have no meaning in
// a sync (delete, rollback), are skipped.
func helmPhases(value string) ([]string, error) {
	var out []string
	for _, v := range splitList(value) {
		switch v {
		case "pre-install", "pre-upgrade":
			out = appendOnce(out, gitsyncv1.HookPreSync)
		case "post-install", "post-upgrade":
			out = appendOnce(out, gitsyncv1.HookPostSync)
		case "test", "test-success", "test-failure", "pre-delete", "post-delete", "pre-rollback", "post-rollback":
		default:
			return nil, fmt.Errorf("annotation %s: unsupported hook %q", gitsyncv1.HelmHookAnnotation, v)
		}
	}
	if len(out) == 0 {
		return []string{gitsyncv1.HookSkip}, nil
	}
	return out, nil
}

func helmPolicies(value string) ([]string, error) {
	var out []string
	for _, v := range splitList(value) {
		switch v {
		case "before-hook-creation":
			out = appendOnce(out, gitsyncv1.HookDeleteBeforeCreation)
		case "hook-succeeded":
			out = appendOnce(out, gitsyncv1.HookDeleteSucceeded)
		case "hook-failed":
			out = appendOnce(out, gitsyncv1.HookDeleteFailed)
		default:
			return nil, fmt.Errorf("annotation %s: unsupported delete policy %q", gitsyncv1.HelmHookDeletePolicyAnnotation, v)
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func appendOnce(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

func sortHooks(hs []Hook) {
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Weight != hs[j].Weight {
			return hs[i].Weight < hs[j].Weight
		}
		return hookKey(hs[i].Object) < hookKey(hs[j].Object)
	})
}

func hookKey(o *unstructured.Unstructured) string {
	name := o.GetName()
	if name == "" {
		name = o.GetGenerateName()
	}
	return o.GetKind() + "/" + o.GetNamespace() + "/" + name
}

func subject(o *unstructured.Unstructured) string {
	return hookKey(o)
}
