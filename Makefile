# gitsync — `make test` is the one command that checks everything before a commit.
SHELL := /usr/bin/env bash
export GOTOOLCHAIN := local
# kustomize's Go-plugin loader is never used (renders run with plugins disabled: nothing is
# loaded or executed); without it a cgo build — every test binary, `make build` — keeps far
# less code resident (the linker keeps every method of types held as interfaces once the
# plugin package is linked, and exports 13 MiB of symbols).
export GOFLAGS := $(strip $(GOFLAGS) -tags=kustomize_disable_go_plugin_support)

CONTROLLER_GEN ?= go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
GO_TEST_FLAGS ?= -race -count=1 -timeout 20m
IMG ?= gitsync:dev

.PHONY: all
all: build

.PHONY: generate
generate: ## Regenerate api/v1alpha1's copies of the v1beta1 types, deepcopy code, CRDs and the manager's ClusterRole.
	go run ./hack/apicopy -src api/v1beta1 -dst api/v1alpha1
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=gitsync-manager paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt: ## Fail when gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n $$out ]]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet:
	go vet ./...

.PHONY: envtest
envtest: ## Build (or reuse) kube-apiserver + etcd for the tests.
	@bash hack/setup-envtest.sh >/dev/null

.PHONY: test
test: fmt vet envtest ## gofmt, go vet, then every test against a real API server (includes the stale-CRD check).
	KUBEBUILDER_ASSETS="$$(bash hack/setup-envtest.sh)" go test $(GO_TEST_FLAGS) ./...

.PHONY: bench
bench: envtest ## Benchmarks (figures, not pass/fail); quote medians of the -count runs.
	go test -run '^$$' -bench '^BenchmarkFetch$$' -benchtime 5x -count 3 ./internal/source/
	go test -run '^$$' -bench FetchLargeHistory -benchtime 1x -count 3 -timeout 60m ./internal/source/
	KUBEBUILDER_ASSETS="$$(bash hack/setup-envtest.sh)" go test -run '^$$' -bench . -benchtime 5x -count 3 ./internal/phase/
	go test -run '^$$' -bench . -benchtime 1x -count 3 ./internal/build/
	go test -run '^$$' -bench PollNoChange -count 3 ./internal/chartrepo/
	go test -run '^$$' -bench Hundred -benchmem -count 3 ./internal/helm/
	KUBEBUILDER_ASSETS="$$(bash hack/setup-envtest.sh)" go test -run '^$$' -bench . -benchtime 1x -count 5 -timeout 60m ./bench/

.PHONY: bench-ci
bench-ci: envtest ## The CI-sized end-to-end benchmarks (100 Applications): figures in the log; a failed check fails.
	GITSYNC_BENCH_IDLE_WINDOW=30s KUBEBUILDER_ASSETS="$$(bash hack/setup-envtest.sh)" go test -run '^$$' \
		-bench '^(BenchmarkScale|BenchmarkShards100x20|BenchmarkChart100|BenchmarkBinary)$$' -benchtime 1x -count 1 -timeout 30m ./bench/

BUNDLE_VERSION ?= $(patsubst v%,%,$(VERSION))
BUNDLE_IMG ?= ghcr.io/gitsync-dev/gitsync:v$(BUNDLE_VERSION)

.PHONY: bundle
bundle: generate ## Regenerate the OLM bundle (bundle/) from config/; internal/bundle's test fails when it is stale.
	go run ./hack/bundle -version $(BUNDLE_VERSION) -image $(BUNDLE_IMG) -dir bundle

# The gitsync binary: `make build` and `make demo` build it with this one recipe, the same
# environment and flags (a static binary, no cgo), so that whichever runs second is a cache
# hit. GITSYNC_BIN puts it elsewhere (internal/demo's tests build their own there).
GITSYNC_BIN ?= bin/gitsync
GO_BUILD_GITSYNC = CGO_ENABLED=0 go build -o $(GITSYNC_BIN) ./cmd/gitsync

.PHONY: build
build: ## Build bin/gitsync (static; the one build `make demo` runs too).
	$(GO_BUILD_GITSYNC)

.PHONY: demo
# The binary is built (by `build`), then run: `go run` exits 1 when Ctrl-C reaches it, even
# though gitsync, which gets the same Ctrl-C, cleans up and exits 0; make would report that
# as an error. Every stop (Ctrl-C, SIGTERM to gitsync or to the process group, SIGHUP) makes
# gitsync clean up, print "stopped" and exit 0; make, when the signal reaches it too, then
# ends on that signal itself, silently, as for any interrupted command.
demo: envtest build ## A local API server + a local Git repo, synced by gitsync (Ctrl-C ends it).
	KUBEBUILDER_ASSETS="$$(bash hack/setup-envtest.sh)" exec $(GITSYNC_BIN) demo

.PHONY: docker-build
docker-build: ## Needs a Docker engine (none on the dev machines).
	docker build -t $(IMG) .

# The version `make bundle` and `make image` stamp: the latest release unless given.
VERSION ?= $(shell awk '$$1 !~ /^\#/ && NF {v=$$1} END {print v}' hack/releases)
IMAGE_PLATFORMS ?= linux/$(shell go env GOARCH)

.PHONY: image
image: ## Build the operator image into an OCI layout (bin/image/): no Docker, no base image, reproducible.
	go run ./hack/image -dir bin/image -version $(VERSION) -platforms $(IMAGE_PLATFORMS)

.PHONY: chart
chart: ## Refresh charts/gitsync/files from config/; internal/chart's test fails when it is stale or disagrees with config/.
	go run ./hack/chart

.PHONY: docs
docs: ## The field reference docs/spec/v1beta1/reference.md from api/v1beta1 (elastic's crd-ref-docs, pinned); cmd/gitsync's TestAPIReferenceIsCurrent fails when it is stale.
	go run github.com/elastic/crd-ref-docs@v0.3.0 --source-path=./api/v1beta1 --config=hack/docs/crd-ref-docs.yaml --renderer=markdown --output-path=docs/spec/v1beta1/reference.md
