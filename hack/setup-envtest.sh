#!/usr/bin/env bash
# Provides the envtest control plane (etcd + kube-apiserver) for the tests and `make demo`.
# Where the internet is reachable, controller-runtime's setup-envtest fetches prebuilt
# binaries in seconds: that is tried first, with a short deadline. Where it is not (these
# machines: no download site answers), they are built from Go modules, which takes minutes;
# that fallback is what CI exercises. The result is cached: a second run with both binaries
# at the pinned versions returns at once. Prints the directory to use as KUBEBUILDER_ASSETS
# on stdout; the notice, progress and errors go to stderr.
#
# Overrides:
#   ENVTEST_ASSETS_DIR             the cache directory (default bin/envtest/k8s-<v>-etcd-<v>)
#   ETCD_VERSION, KUBE_VERSION     the pinned versions
#   GITSYNC_ENVTEST_PREBUILT=0     do not try prebuilt binaries; build them
#   GITSYNC_ENVTEST_FETCH_TIMEOUT  seconds the prebuilt binaries may take to arrive (default 30)
#   GITSYNC_ENVTEST_INDEX          setup-envtest's index of prebuilt archives (default its own)
#   GITSYNC_ENVTEST_PROGRESS       seconds between "still building" lines (default 30)
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
KUBE_VERSION=${KUBE_VERSION:-v1.37.1}
# Staging modules of k8s.io/kubernetes are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# The newest release of the tool the module proxy serves (controller-runtime's own
# release in go.mod, v0.25.2, has none).
SETUP_ENVTEST=sigs.k8s.io/controller-runtime/tools/setup-envtest@v0.25.1

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${ENVTEST_ASSETS_DIR:-$root/bin/envtest/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}}
stamp="$dir/.versions"
want="etcd=${ETCD_VERSION} kube-apiserver=${KUBE_VERSION}"
fetch_timeout=${GITSYNC_ENVTEST_FETCH_TIMEOUT:-30}
progress=${GITSYNC_ENVTEST_PROGRESS:-30}

cached() { [[ -x $dir/etcd && -x $dir/kube-apiserver && -f $stamp && $(cat "$stamp") == "$want" ]]; }

if cached; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
# One build at a time: a second caller (another test run, another shell) waits for the
# first one's result instead of compiling kube-apiserver again beside it.
exec 9>"$dir/.lock"
log() { echo "setup-envtest: $*" >&2; }
if ! flock -n 9; then
  log "another run is getting etcd and kube-apiserver into $dir: waiting for it"
  flock 9
fi
if cached; then
  echo "$dir"
  exit 0
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
work=$(mktemp -d)
heartbeat=
trap '[[ -z $heartbeat ]] || kill "$heartbeat" 2>/dev/null; rm -rf "$work"' EXIT
start=$SECONDS

elapsed() { local s=$((SECONDS - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# step WHAT CMD...: runs CMD with its output in a log (shown when it fails), saying every
# $progress seconds that WHAT is still running, and for how long.
step() {
  local what=$1 t0=$SECONDS rc=0
  shift
  log "$what..."
  (
    trap 'kill $s 2>/dev/null; exit 0' TERM
    while :; do
      sleep "$progress" &
      s=$!
      wait $s
      log "  $what: still running ($(elapsed "$t0"); $(elapsed "$start") in all)"
    done
  ) >&2 &
  heartbeat=$!
  "$@" >"$work/step.log" 2>&1 || rc=$?
  kill "$heartbeat" 2>/dev/null || true
  wait "$heartbeat" 2>/dev/null || true
  heartbeat=
  if ((rc != 0)); then
    tail -n 30 "$work/step.log" >&2
    log "$what failed (exit $rc) after $(elapsed "$t0")"
    exit "$rc"
  fi
  log "  $what: done in $(elapsed "$t0")"
}

# prebuilt fetches setup-envtest's binaries for KUBE_VERSION into $dir; false (with the
# reason said) when they do not arrive within the deadline.
prebuilt() {
  [[ ${GITSYNC_ENVTEST_PREBUILT:-1} != 0 ]] || return 1
  log "trying prebuilt binaries first (setup-envtest, at most ${fetch_timeout}s)"
  if ! GOBIN="$work/bin" timeout 120 go install "$SETUP_ENVTEST" >"$work/prebuilt.log" 2>&1; then
    log "  no setup-envtest ($(tail -n 1 "$work/prebuilt.log")): building from Go modules instead"
    return 1
  fi
  local args=(use "${KUBE_VERSION#v}" --bin-dir "$work/prebuilt" -p path) path
  [[ -z ${GITSYNC_ENVTEST_INDEX:-} ]] || args+=(--index "$GITSYNC_ENVTEST_INDEX")
  if ! path=$(timeout "$fetch_timeout" "$work/bin/setup-envtest" "${args[@]}" 2>"$work/prebuilt.log") ||
    [[ ! -x $path/etcd || ! -x $path/kube-apiserver ]]; then
    local why
    why=$(tail -n 1 "$work/prebuilt.log")
    log "  none (${why:-no answer within ${fetch_timeout}s}): building from Go modules instead"
    return 1
  fi
  # A prebuilt pair stands for the pinned one: kube-apiserver at KUBE_VERSION, and the
  # etcd setup-envtest ships with it (.origin says so).
  cp "$path/etcd" "$dir/etcd.new" && mv "$dir/etcd.new" "$dir/etcd"
  cp "$path/kube-apiserver" "$dir/kube-apiserver.new" && mv "$dir/kube-apiserver.new" "$dir/kube-apiserver"
  echo "prebuilt: $SETUP_ENVTEST use ${KUBE_VERSION#v} (etcd as it ships with it)" >"$dir/.origin"
  log "  fetched prebuilt binaries in $(elapsed "$start")"
}

# The builds run in subshells of their own (they cd), every command chained: a step's
# command runs where `set -e` does not apply.
build_etcd() (
  mkdir -p "$work/etcd" && cd "$work/etcd" &&
    go mod init envtest.local/etcd &&
    go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" &&
    go build -o "$dir/etcd" go.etcd.io/etcd/server/v3
)

build_kube_apiserver() (
  mkdir -p "$work/kube" && cd "$work/kube" && go mod init envtest.local/kube || exit
  kgomod=$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $kgomod ]] || { echo "cannot find go.mod of k8s.io/kubernetes@${KUBE_VERSION}"; exit 1; }
  {
    echo "require k8s.io/kubernetes ${KUBE_VERSION}"
    # Every staging module replaced by its published version.
    grep -oE '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$kgomod" | awk '{print $1}' | sort -u |
      while read -r m; do echo "replace $m => $m ${STAGING_VERSION}"; done
  } >>go.mod &&
    go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}" &&
    go build -ldflags "-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}" \
      -o "$dir/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
)

log "etcd ${ETCD_VERSION} and kube-apiserver ${KUBE_VERSION} are not in $dir yet. The first run gets them:" \
  "in seconds where prebuilt ones can be downloaded, otherwise it builds them from Go modules," \
  "which takes a few minutes (10-20 on a busy machine); later runs reuse them."
rm -f "$dir/.origin"
if ! prebuilt; then
  if [[ ! -x $dir/etcd ]] || ! grep -q "etcd=${ETCD_VERSION}" "$stamp" 2>/dev/null; then
    step "[1/2] building etcd ${ETCD_VERSION}" build_etcd
  else
    log "[1/2] etcd ${ETCD_VERSION}: already built"
  fi
  step "[2/2] building kube-apiserver ${KUBE_VERSION}" build_kube_apiserver
  echo "built from Go modules" >"$dir/.origin"
fi

echo "$want" >"$stamp"
log "done in $(elapsed "$start"): $dir"
echo "$dir"
