// Package phase plans and runs an ordered sync: it sorts a render into hooks (PreSync,
// Sync, PostSync, SyncFail) and sync waves from gitsync's, Argo CD's and Helm's
// annotations, then applies them in that order, waiting for each wave's health and each
// hook's end (run.go, hooks.go, wait.go), and resumes a sync that waits (resume.go).
package phase

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
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
	// Together marks an Argo CD hook (argocd.argoproj.io/hook): the hooks of one weight
	// are created together and waited for together, as Argo CD runs a wave. Helm's and
	// gitsync's hooks are created and waited for one at a time, as Helm runs them.
	Together bool
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

// Without drops from the waves the objects whose inventory ID is in ids (and the waves
// left empty); hooks are kept.
func (p *Plan) Without(ids map[string]bool) {
	if len(ids) == 0 {
		return
	}
	waves := p.Waves[:0]
	for _, w := range p.Waves {
		kept := w.Objects[:0:0]
		for _, o := range w.Objects {
			if !ids[apply.EntryOf(o).ID] {
				kept = append(kept, o)
			}
		}
		if len(kept) > 0 {
			waves = append(waves, Wave{Number: w.Number, Objects: kept})
		}
	}
	p.Waves = waves
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
		phases, weight, policies, argo, err := hookOf(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject(o), err)
		}
		if len(phases) == 1 && phases[0] == gitsyncv1.HookSkip {
			p.Skipped = append(p.Skipped, o)
			continue
		}
		if len(phases) > 0 {
			for _, ph := range phases {
				h := Hook{Object: o, Phase: ph, Weight: weight, DeletePolicies: policies, Together: argo}
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
	// Definitions (CRDs, Namespaces) go first, whatever their wave: later waves'
	// objects and hooks may need them (a CR of a CRD, an object in a new Namespace).
	var first []*unstructured.Unstructured
	for _, n := range numbers {
		kept := waves[n][:0]
		for _, o := range waves[n] {
			if IsDefinition(o) {
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

// IsDefinition tells whether o defines what other objects need to exist: a
// CustomResourceDefinition or a Namespace. Definitions are applied before PreSync hooks
// and head the first wave; nothing else is (ClusterRoles, for one, wait for their wave).
func IsDefinition(o *unstructured.Unstructured) bool {
	return utils.IsCRD(o) || utils.IsNamespace(o)
}

// hookOf reads the hook annotations: gitsync's first, then Argo CD's, then Helm's.
// argo tells that Argo CD's annotation made it a hook.
func hookOf(o *unstructured.Unstructured) (phases []string, weight int, policies []string, argo bool, err error) {
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
		argo = true
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
		return nil, 0, nil, false, nil
	}
	if err != nil {
		return nil, 0, nil, false, err
	}
	if len(policies) == 0 {
		policies = []string{gitsyncv1.HookDeleteBeforeCreation}
	}
	return phases, weight, policies, argo, nil
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

// sortHooks orders the hooks of one phase as Helm installs them: by weight, then by
// kind in Helm's install order (ServiceAccount, Secret, ConfigMap, …, ClusterRole,
// ClusterRoleBinding, Role, RoleBinding, Service, …, Job; kinds it does not list last,
// alphabetically), then by namespace and name.
func sortHooks(hs []Hook) {
	sort.SliceStable(hs, func(i, j int) bool {
		a, b := hs[i], hs[j]
		if a.Weight != b.Weight {
			return a.Weight < b.Weight
		}
		ka, kb := a.Object.GetKind(), b.Object.GetKind()
		if ra, rb := kindRank(ka), kindRank(kb); ra != rb {
			return ra < rb
		}
		if ka != kb {
			return ka < kb
		}
		return hookKey(a.Object) < hookKey(b.Object)
	})
}

// installOrder is Helm's install order of kinds (helm.sh/helm/v4 pkg/release/v1/util
// InstallOrder), which its hooks of equal weight follow.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

var kindRanks = func() map[string]int {
	m := make(map[string]int, len(installOrder))
	for i, k := range installOrder {
		m[k] = i
	}
	return m
}()

// kindRank is a kind's place in installOrder; kinds it does not list come after all.
func kindRank(kind string) int {
	if r, ok := kindRanks[kind]; ok {
		return r
	}
	return len(installOrder)
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
