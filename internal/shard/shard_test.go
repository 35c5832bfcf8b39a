package shard

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{in: "", want: Shard{}},
		{in: "0/1", want: Shard{Index: 0, Count: 1}},
		{in: "0/2", want: Shard{Index: 0, Count: 2}},
		{in: "1/2", want: Shard{Index: 1, Count: 2}},
		{in: "7/10", want: Shard{Index: 7, Count: 10}},
		{in: "2/2", wantErr: "N must be in 0..1"},
		{in: "-1/2", wantErr: "N must be in 0..1"},
		{in: "0/0", wantErr: "M must be at least 1"},
		{in: "1", wantErr: "want N/M"},
		{in: "a/2", wantErr: "N is not a number"},
		{in: "0/b", wantErr: "M is not a number"},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if tc.in != "" && tc.want.Enabled() && got.String() != tc.in {
			t.Errorf("Parse(%q).String() = %q", tc.in, got.String())
		}
	}
}

func object(ns, name string, labels map[string]string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

// The hash is FNV-1a 32 of "namespace/name": these values are what every replica (and
// every version) must compute, or objects would change hands on an upgrade.
func TestHashIsStable(t *testing.T) {
	for _, tc := range []struct {
		key  types.NamespacedName
		want uint32
	}{
		{types.NamespacedName{}, 0x2a0c975e},                                 // "/"
		{types.NamespacedName{Namespace: "a", Name: "b"}, 0x3a8e75c1},        // "a/b"
		{types.NamespacedName{Namespace: "team-a", Name: "web"}, 0xb9ec7a63}, // "team-a/web"
	} {
		if got := Hash(tc.key); got != tc.want {
			t.Errorf("Hash(%v) = %#x, want %#x", tc.key, got, tc.want)
		}
	}
}

func TestOwns(t *testing.T) {
	// "team-a/web" hashes to 0xb9ec7a63: shard 1 of 2, shard 0 of 3 (0xb9ec7a63 % 3 == 0).
	for _, tc := range []struct {
		name   string
		labels map[string]string
		count  int
		want   int // the owning index
	}{
		{name: "hash, 2 shards", count: 2, want: 1},
		{name: "hash, 3 shards", count: 3, want: 0},
		{name: "label overrides the hash", labels: map[string]string{gitsyncv1.ShardLabel: "0"}, count: 2, want: 0},
		{name: "label of the last shard", labels: map[string]string{gitsyncv1.ShardLabel: "2"}, count: 3, want: 2},
		{name: "label out of range is ignored", labels: map[string]string{gitsyncv1.ShardLabel: "2"}, count: 2, want: 1},
		{name: "label not a number is ignored", labels: map[string]string{gitsyncv1.ShardLabel: "x"}, count: 2, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object("team-a", "web", tc.labels)
			owners := 0
			for i := range tc.count {
				if (Shard{Index: i, Count: tc.count}).Owns(obj) {
					owners++
					if i != tc.want {
						t.Errorf("shard %d/%d owns it, want %d", i, tc.count, tc.want)
					}
				}
			}
			if owners != 1 {
				t.Errorf("%d shards own it, want exactly 1", owners)
			}
		})
	}
}

func TestNoShardingOwnsEverything(t *testing.T) {
	for _, s := range []Shard{{}, {Index: 0, Count: 1}} {
		if !s.Owns(object("ns", "x", map[string]string{gitsyncv1.ShardLabel: "1"})) {
			t.Errorf("%#v does not own an object", s)
		}
		if s.Enabled() {
			t.Errorf("%#v is enabled", s)
		}
	}
}

// Over many names the hash splits objects about evenly.
func TestHashSpreads(t *testing.T) {
	counts := make([]int, 4)
	for i := range 4000 {
		counts[(Shard{Count: 4}).Of(types.NamespacedName{Namespace: "ns", Name: "app-" + strconv.Itoa(i)}, nil)]++
	}
	for i, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d of 4 got %d of 4000 names: %v", i, n, counts)
		}
	}
}
