// Command image builds gitsync's container image without Docker or a base image
// (internal/image) into an OCI image layout, and with -push uploads it to a registry.
//
//	go run ./hack/image -dir bin/image                       # this machine's architecture
//	go run ./hack/image -platforms linux/amd64,linux/arm64 -version v0.2.0 -push ghcr.io/gitsync-dev/gitsync:v0.2.0
//
// Reproducible: SOURCE_DATE_EPOCH (default 0) is the time of the image and every file in
// it; the same commit, version and Go toolchain give the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gitsync-dev/gitsync/config"
	"github.com/gitsync-dev/gitsync/internal/image"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "bin/image", "the OCI image layout to (re)write")
	platforms := flag.String("platforms", "linux/"+runtime.GOARCH, "comma-separated os/arch list")
	version := flag.String("version", "", "the version stamped into the binary and the tag; default: the latest release of hack/releases")
	push := flag.String("push", "", "also push the image index to this reference (Docker config credentials)")
	digestFile := flag.String("digest-file", "", "also write the image index's digest (sha256:...) to this file")
	caCerts := flag.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to install")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if *version == "" {
		data, err := os.ReadFile("hack/releases")
		if err != nil {
			return fmt.Errorf("reading the releases: %w", err)
		}
		v, err := config.LatestRelease(data)
		if err != nil {
			return fmt.Errorf("hack/releases: %w", err)
		}
		*version = v
	}
	created := time.Unix(0, 0)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		created = time.Unix(sec, 0)
	}
	certs, err := image.ReadFile(*caCerts)
	if err != nil {
		return err
	}
	ldflags := "-X github.com/gitsync-dev/gitsync/internal/cli.Version=" + *version +
		" -X github.com/gitsync-dev/gitsync/config.Version=" + *version
	var imgs []v1.Image
	for _, p := range strings.Split(*platforms, ",") {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || osName != "linux" {
			return fmt.Errorf("platform %q: want linux/<arch>", p)
		}
		bin, err := image.Compile(ctx, ".", "./cmd/gitsync", arch, ldflags)
		if err != nil {
			return err
		}
		img, err := image.Build(image.Options{
			Binary: bin, CACerts: certs, Created: created, Version: *version,
			Platform: v1.Platform{OS: osName, Architecture: arch},
		})
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("linux/%s: %s\n", arch, d)
		imgs = append(imgs, img)
	}
	idx, err := image.Index(imgs...)
	if err != nil {
		return err
	}
	ref := config.ImageRepository + ":" + *version
	if err := image.WriteLayout(*dir, idx, ref); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	size, err := image.Size(idx)
	if err != nil {
		return err
	}
	fmt.Printf("%s in %s: digest %s, size %d bytes (%.1f MiB)\n", ref, *dir, digest, size, float64(size)/(1<<20))
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte(digest.String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	if *push != "" {
		if err := image.Push(ctx, idx, *push); err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", *push, digest)
	}
	return nil
}
