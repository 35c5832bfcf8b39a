package oci_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gitsync-dev/gitsync/internal/oci"
)

// GC keeps the artifacts in use and young ones, and removes the others.
func TestGCKeepsWhatIsInUse(t *testing.T) {
	reg := newRegistry(t, "", "")
	c, _ := oci.New(t.TempDir(), oci.Options{})
	push(t, c, "oci://"+reg.host+"/apps/web:v1", writeTree(t, map[string]string{"a.yaml": "a: 1\n"}))
	push(t, c, "oci://"+reg.host+"/apps/web:v2", writeTree(t, map[string]string{"a.yaml": "a: 2\n"}))
	pull := func(tag string) *oci.Artifact {
		art, err := c.Pull(context.Background(), oci.Request{URL: "oci://" + reg.host + "/apps/web", Ref: oci.Ref{Tag: tag}, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return art
	}
	v1, v2 := pull("v1"), pull("v2")
	if n, err := c.GC(map[string]bool{v2.Dir: true}, time.Hour); err != nil || n != 0 {
		t.Fatalf("GC of young artifacts removed %d, %v", n, err)
	}
	if n, err := c.GC(map[string]bool{v2.Dir: true}, 0); err != nil || n != 1 {
		t.Fatalf("GC removed %d, %v; want the one not in use", n, err)
	}
	if _, err := os.Stat(v1.Dir); !os.IsNotExist(err) {
		t.Fatalf("the artifact not in use is still there: %v", err)
	}
	if _, err := os.Stat(v2.Dir); err != nil {
		t.Fatalf("the artifact in use is gone: %v", err)
	}
}
