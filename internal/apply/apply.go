// Package apply applies the objects of one Application as a unit: a thin layer over
// fluxcd/pkg/ssa that adds gitsync's owner labels, a server-side dry-run of the whole
// set before anything is written, the inventory, a prune that only deletes objects
// carrying the owner's labels, and health (as internal/health judges it).
package apply

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/health"
)

const (
	// concurrency bounds the GETs and dry-runs in flight for one Apply.
	concurrency = 4
	// stageWaitInterval and stageWaitTimeout bound the wait for the first stage
	// (CRDs, Namespaces, ClusterRoles) to be ready before the rest is applied.
	stageWaitInterval = 500 * time.Millisecond
	stageWaitTimeout  = time.Minute
	// pollInterval is how often Wait reads the objects.
	pollInterval = time.Second
)

// Manager applies, prunes and checks the health of the objects of one Owner.
type Manager struct {
	client       client.Client
	reader       client.Reader
	owner        Owner
	ssa          *ssa.ResourceManager
	concurrency  int
	pollInterval time.Duration
	// judge judges health (nil: kstatus alone; SetJudge).
	judge *health.Judge
}

// New returns a Manager for owner. Every read that decides what to write, every apply
// and every delete goes through c (an impersonating client when the Application names
// a service account); reader (which may be c) reads status, for Health, Wait and the
// wait between stages, and should not be a cache.
func New(c client.Client, reader client.Reader, owner Owner) *Manager {
	rm := ssa.NewResourceManager(c, health.StatusPoller(reader, c.RESTMapper()), ssa.Owner{
		Field: gitsyncv1.FieldManager,
		Group: gitsyncv1.GroupVersion.Group,
	})
	rm.SetConcurrency(concurrency)
	return &Manager{
		client:       c,
		reader:       reader,
		owner:        owner,
		ssa:          rm,
		concurrency:  concurrency,
		pollInterval: pollInterval,
	}
}

// Options tune an Apply.
type Options struct {
	// Force recreates objects whose immutable fields changed (ssa ApplyOptions.Force).
	Force bool
	// Previous is the last inventory: only objects that are not in it are checked
	// for another owner (one GET each).
	Previous []Entry
	// OwnerReleased, when set, lets Apply take over an object labelled for another
	// Application that has let go of it (moved to this Application in Git, or the
	// other Application was renamed or deleted): the object is relabelled in place,
	// never deleted. Without it such an object is a *ConflictError.
	OwnerReleased ReleasedFunc
	// Ignore, when set, returns the JSON pointers (RFC 6901) of an object's fields
	// that spec.ignoreDifferences leaves to others: an object that exists keeps its
	// live values there (a missing live field is left out of the apply), so an
	// apply does not reset, say, replicas that an autoscaler set. New objects get
	// Git's values.
	Ignore func(*unstructured.Unstructured) []string
	// Unchanged, when set, tells the objects that are provably in the cluster as Git
	// wants them (the drift watches saw no write since they were applied or checked):
	// in a set of one stage applied without Force they are not sent at all (no
	// dry-run, no read, no apply) and reported unchanged.
	Unchanged func(*unstructured.Unstructured) bool
	// Owners, when set, reads owner labels from a watch cache of the objects that carry
	// one (the drift watches). In a set applied directly (one stage, without Force), a
	// new object whose kind the cache holds is checked for another owner without a
	// request, and read (one GET, through the Manager's client) only when the cache
	// names another owner; one the cache does not know but that exists is checked again
	// on the live copy the apply reads to compare it (the cache may lag).
	Owners OwnerLookup
}

// Apply applies objs as one unit; objs themselves are not modified.
//
//  1. Each object gets the owner labels.
//  2. Each object that is not in opts.Previous is read: if it exists with the labels of
//     another Application that has not released it (opts.OwnerReleased), Apply
//     returns a *ConflictError and writes nothing.
//  3. Every object is dry-run (server-side apply, dry-run). If any fails (invalid,
//     forbidden, an immutable field changed without Force...), Apply returns a
//     *DryRunError naming every failing object and writes nothing.
//     Exception: an object whose kind is defined by a CRD of the same set, or whose
//     Namespace is created by the same set, cannot be judged before that definition
//     exists. When such an object fails its dry-run, the first stage (the set's CRDs,
//     Namespaces and ClusterRoles) is applied and becomes ready (CRDs Established and
//     their kinds served by discovery), then those objects are dry-run again; if one
//     still fails, Apply returns a *DryRunError and nothing past the first stage is
//     written. Objects that opts.Ignore names fields of keep their live values there.
//  4. The set is applied in stages by ssa (CRDs, Namespaces and ClusterRoles first,
//     then classes, then the rest); objects whose dry-run shows no change are not
//     written, so their resourceVersion does not move. A stage of its own without
//     Force and without definitions (the common case) is applied directly instead (see applyDirect): one
//     dry-run and one apply per new object, objects opts.Unchanged vouches for skipped.
//
// When the error comes from a stage that failed after an earlier stage was written,
// the returned Result holds what was applied; otherwise it is nil.
func (m *Manager) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts Options) (*Result, error) {
	set := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		set[i] = o.DeepCopy()
		m.owner.setLabels(set[i])
	}
	sort.Sort(ssa.SortableUnstructureds(set))

	// The watch cache answers the owner check only for a set applied directly, whose
	// apply reads every existing object live and checks its owner again (see plan).
	lookup := opts.Owners
	if opts.Force || !onlyLastStage(set) {
		lookup = nil
	}
	previous := entryIDs(opts.Previous)
	cachedOwners, err := m.checkOwners(ctx, set, previous, lookup, opts.OwnerReleased)
	if err != nil {
		return nil, err
	}
	if err := m.respectIgnored(ctx, set, opts.Ignore); err != nil {
		return nil, err
	}
	// ssa's ApplyAll dry-runs every object of a stage before it writes any, so a set of
	// one stage is already all-or-nothing. Our own dry-run of the whole set is needed
	// when there are several stages (a later one must not fail after an earlier one was
	// written) and with Force (ssa deletes an immutable object during its dry-run pass,
	// before it knows whether the rest of the stage is valid).
	var later []*unstructured.Unstructured
	fresh := map[string]bool{}
	if opts.Force || stages(set) > 1 {
		var err error
		if later, err = m.dryRunAll(ctx, set, definitionsOf(set), opts.Force, fresh); err != nil {
			return nil, err
		}
	}

	ssaOpts := ssa.DefaultApplyOptions()
	ssaOpts.Force = opts.Force
	ssaOpts.WaitInterval = stageWaitInterval
	ssaOpts.WaitTimeout = stageWaitTimeout

	unchanged := map[string]bool{}
	if opts.Unchanged != nil && !opts.Force {
		for _, o := range objs {
			if opts.Unchanged(o) {
				unchanged[EntryOf(o).ID] = true
			}
		}
	}
	result := &Result{unchanged: unchanged, cachedOwners: cachedOwners, released: opts.OwnerReleased, previous: previous, fresh: fresh}
	var first, rest []*unstructured.Unstructured
	for _, o := range set {
		if utils.IsClusterDefinition(o) {
			first = append(first, o)
		} else {
			rest = append(rest, o)
		}
	}
	// With CRDs in the first stage, the rest is applied only once their kinds are
	// served (ssa's own staging waits for Established, not for discovery).
	if len(later) > 0 || (len(rest) > 0 && len(servedKinds(first)) > 0) {
		if err := m.applyDefinitions(ctx, first, ssaOpts, result); err != nil {
			return result, err
		}
		if err := m.waitServed(ctx, first); err != nil {
			return result, err
		}
		if len(later) > 0 {
			if _, err := m.dryRunAll(ctx, later, definitions{}, opts.Force, fresh); err != nil {
				return result, err
			}
		}
		set = rest
	}
	if err := m.applyStaged(ctx, set, ssaOpts, result); err != nil {
		var ssaDryRun *ssaerrors.DryRunErr
		if len(later) == 0 && errors.As(err, &ssaDryRun) && len(result.Changes) == 0 {
			// ssa stopped at its first failing dry-run, before writing anything: our
			// own pass names every failing object (and says when force would help).
			if _, detailed := m.dryRunAll(ctx, set, definitionsOf(set), opts.Force, nil); detailed != nil {
				return nil, detailed
			}
			return nil, err
		}
		if errors.As(err, new(*DryRunError)) && len(result.Changes) == 0 {
			return nil, err // applyDirect's dry-run: nothing was written
		}
		return result, err
	}
	return result, nil
}

// stages counts the stages ssa's ApplyAllStaged splits objs into: cluster definitions
// (CRDs, Namespaces, ClusterRoles), class definitions, and the rest.
func stages(objs []*unstructured.Unstructured) int {
	var cluster, class, rest int
	for _, o := range objs {
		switch {
		case utils.IsClusterDefinition(o):
			cluster = 1
		case utils.IsClassDefinition(o):
			class = 1
		default:
			rest = 1
		}
	}
	return cluster + class + rest
}

// onlyLastStage tells whether objs are all of ssa's last stage: no cluster definition
// (whose readiness ssa waits for) and no class definition.
func onlyLastStage(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if utils.IsClusterDefinition(o) || utils.IsClassDefinition(o) {
			return false
		}
	}
	return true
}

// applyDefinitions applies the cluster definitions (CRDs, Namespaces, ClusterRoles) of
// a set that has more stages, and records the changes in result. It does not wait: of
// these only a CRD takes time to be ready, and waitServed waits for exactly that, told by
// a watch of the CRD (ssa's ApplyAllStaged would poll every stageWaitInterval, so that a
// CRD Established a moment after its first look cost a whole interval).
func (m *Manager) applyDefinitions(ctx context.Context, objs []*unstructured.Unstructured, opts ssa.ApplyOptions, result *Result) error {
	cs, err := m.ssa.ApplyAll(ctx, objs, opts)
	if cs != nil {
		result.add(cs.Entries)
	}
	if err != nil {
		return fmt.Errorf("applying objects: %w", err)
	}
	return nil
}

// applyStaged applies objs with ssa's ApplyAllStaged and records the changes in result.
func (m *Manager) applyStaged(ctx context.Context, objs []*unstructured.Unstructured, opts ssa.ApplyOptions, result *Result) error {
	if !opts.Force && onlyLastStage(objs) {
		return m.applyDirect(ctx, objs, result)
	}
	cs, err := m.ssa.ApplyAllStaged(ctx, objs, opts)
	if cs != nil {
		result.add(cs.Entries)
	}
	if err != nil {
		return fmt.Errorf("applying objects: %w", err)
	}
	return nil
}
