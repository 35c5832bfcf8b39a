#!/usr/bin/env bash
# Builds the envtest control plane (etcd + kube-apiserver) from Go modules, because this
# machine cannot download setup-envtest's prebuilt binaries. The result is cached: a second
# run with both binaries at the pinned versions returns at once. Prints the directory to
# use as KUBEBUILDER_ASSETS on stdout; progress goes to stderr.
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
KUBE_VERSION=${KUBE_VERSION:-v1.37.1}
# Staging modules of k8s.io/kubernetes are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${ENVTEST_ASSETS_DIR:-$root/bin/envtest/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}}
stamp="$dir/.versions"
want="etcd=${ETCD_VERSION} kube-apiserver=${KUBE_VERSION}"

if [[ -x $dir/etcd && -x $dir/kube-apiserver && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
# One build at a time: a second caller (another test run, another shell) waits for the
# first one's result instead of compiling kube-apiserver again beside it.
exec 9>"$dir/.lock"
flock 9
if [[ -x $dir/etcd && -x $dir/kube-apiserver && -f $stamp && $(cat "$stamp") == "$want" ]]; then
  echo "$dir"
  exit 0
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

log() { echo "setup-envtest: $*" >&2; }

if [[ ! -x $dir/etcd ]] || ! grep -q "etcd=${ETCD_VERSION}" "$stamp" 2>/dev/null; then
  log "building etcd ${ETCD_VERSION}"
  mkdir -p "$work/etcd"
  (
    cd "$work/etcd"
    go mod init envtest.local/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
    go build -o "$dir/etcd" go.etcd.io/etcd/server/v3 >&2
  )
fi

log "building kube-apiserver ${KUBE_VERSION}"
mkdir -p "$work/kube"
(
  cd "$work/kube"
  go mod init envtest.local/kube >/dev/null 2>&1
  kgomod=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $kgomod ]] || { log "cannot find go.mod of k8s.io/kubernetes@${KUBE_VERSION}"; exit 1; }
  {
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    # Every staging module replaced by its published version.
    grep -oE '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$kgomod" | awk '{print $1}' | sort -u |
      while read -r m; do echo "replace $m => $m ${STAGING_VERSION}"; done
  } >>go.mod
  go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" >&2
  go build -ldflags "-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}" \
    -o "$dir/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
)

echo "$want" >"$stamp"
log "done: $dir"
echo "$dir"
