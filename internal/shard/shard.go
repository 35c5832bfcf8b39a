// Package shard splits gitsync's objects between replicas: `gitsync run --shard N/M`.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Shard is the part of the objects one replica owns: those whose shard number is Index,
// out of Count. The zero Shard owns everything (no sharding).
type Shard struct {
	Index, Count int
}

// Object is what Owns reads of an object.
type Object interface {
	GetNamespace() string
	GetName() string
	GetLabels() map[string]string
}

// Parse reads "N/M" (0 <= N < M); "" is the zero Shard.
func Parse(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	n, m, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want N/M, e.g. 0/2", s)
	}
	index, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: N is not a number", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(m))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: M is not a number", s)
	}
	if count < 1 {
		return Shard{}, fmt.Errorf("shard %q: M must be at least 1", s)
	}
	if index < 0 || index >= count {
		return Shard{}, fmt.Errorf("shard %q: N must be in 0..%d", s, count-1)
	}
	return Shard{Index: index, Count: count}, nil
}

// String is "N/M", or "" for the zero Shard.
func (s Shard) String() string {
	if !s.Enabled() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Enabled tells whether the objects are split (more than one shard).
func (s Shard) Enabled() bool { return s.Count > 1 }

// Owns tells whether obj belongs to this shard: the number in its gitsync.dev/shard label
// when that is in 0..Count-1, or else the hash of its namespace/name.
func (s Shard) Owns(obj Object) bool {
	if !s.Enabled() {
		return true
	}
	return s.Of(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj.GetLabels()) == s.Index
}

// Of is the shard number of the object key with these labels, out of s.Count.
func (s Shard) Of(key types.NamespacedName, labels map[string]string) int {
	if s.Count <= 1 {
		return 0
	}
	if v, ok := labels[gitsyncv1.ShardLabel]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < s.Count {
			return n
		}
	}
	return int(Hash(key) % uint32(s.Count))
}

// Hash is the FNV-1a (32-bit) hash of "namespace/name": stable across versions and
// replicas, so that every replica computes the same owner.
func Hash(key types.NamespacedName) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key.Namespace + "/" + key.Name))
	return h.Sum32()
}
