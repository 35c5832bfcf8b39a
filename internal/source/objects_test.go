package source

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A pack of at most memoryPackSize bytes is kept in memory (no temporary directory);
// a larger one goes to a temporary directory, removed on close. Either way the storage
// gets the whole pack, its first bytes included, and later packs of the same fetch go
// where the first went.
func TestObjectStorePicksMemoryForSmallPacks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		onDisk bool
	}{
		{"small", 4 << 10, false},
		{"at the limit", memoryPackSize, false},
		{"over it", memoryPackSize + 1, true},
		{"large", 3 * memoryPackSize, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := newTestFetcher(t)
			o := &objectStore{f: f}
			pack := make([]byte, tc.size)
			_, _ = rand.Read(pack)

			st, whole, err := o.pick(bytes.NewReader(pack))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).To(BeIdenticalTo(o.st))
			got, err := io.ReadAll(whole)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.Equal(got, pack)).To(BeTrue(), "the storage reads the pack whole")
			names, _ := readDirNames(f.dir)
			if tc.onDisk {
				g.Expect(o.dir).To(HavePrefix(filepath.Join(f.dir, tmpPrefix+"objects-")))
				g.Expect(names).To(ConsistOf(filepath.Base(o.dir)))
			} else {
				g.Expect(o.dir).To(BeEmpty())
				g.Expect(names).To(BeEmpty(), "nothing on disk")
			}

			again, rest, err := o.pick(strings.NewReader("next"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(BeIdenticalTo(st))
			next, _ := io.ReadAll(rest)
			g.Expect(string(next)).To(Equal("next"))

			o.close()
			names, _ = readDirNames(f.dir)
			g.Expect(names).To(BeEmpty())
		})
	}
}

// A commit whose pack is larger than memoryPackSize is fetched through the disk and
// checked out byte for byte, leaving no temporary directory behind; one of a few KiB
// through memory, the same.
func TestFetchLargeAndSmallPacks(t *testing.T) {
	g := NewWithT(t)
	srv := gittest.NewServer(t, gittest.Options{})
	big := make([]byte, memoryPackSize+memoryPackSize/2) // random: the pack cannot be smaller
	_, _ = rand.Read(big)
	srv.CreateRepo("large").Commit("main", "big", map[string]string{"big.bin": string(big), "a.yaml": "v: 1"})
	srv.CreateRepo("small").Commit("main", "small", map[string]string{"a.yaml": "v: 1", "dir/b.yaml": "v: 2"})
	f := newTestFetcher(t)

	a, err := f.Fetch(context.Background(), Request{URL: srv.HTTPURL("large"), Ref: Ref{Branch: "main"}})
	g.Expect(err).NotTo(HaveOccurred())
	got, err := os.ReadFile(filepath.Join(a.Dir, "big.bin"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(got, big)).To(BeTrue(), "big.bin checked out byte for byte")

	a, err = f.Fetch(context.Background(), Request{URL: srv.HTTPURL("small"), Ref: Ref{Branch: "main"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(readTree(t, a.Dir)).To(Equal(map[string]string{"a.yaml": "v: 1", "dir/b.yaml": "v: 2"}))

	names, _ := readDirNames(f.dir)
	for _, n := range names {
		g.Expect(n).NotTo(HavePrefix(tmpPrefix), "no temporary directory left")
	}
}
