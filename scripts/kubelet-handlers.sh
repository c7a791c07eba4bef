#!/usr/bin/env bash
# kubelet's own probe handlers as a program, for the differential test of probelet's handlers
# (tests/probe/differential_test.ts, `deno task fuzz:kubelet`).
#
#   bash scripts/kubelet-handlers.sh build   # build (or reuse) the binary, print measurements
#   bash scripts/kubelet-handlers.sh path    # print the binary's path (exit 1 when not built)
#
# Pinned: k8s.io/kubernetes v1.36.3's pkg/probe/http and pkg/probe/grpc (build module
# scripts/kubelet-handlers, staging modules replaced by their published v0.36.3, as
# scripts/kube-apiserver/apiserver). The binary is cached OUTSIDE the clone, keyed by that version
# and a hash of the build files:
#   ${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}/kubelet-handlers-<k8s>-<hash>/
# Go modules come from Go's own module cache (`go env GOMODCACHE`), which the kube-apiserver build
# fills too. Output is key=value lines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
k8s_version=v1.36.3
build_dir=$repo/scripts/kubelet-handlers

say() { echo "kubelet-handlers.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

build_hash() {
  cat "$build_dir"/go.mod "$build_dir"/go.sum "$build_dir"/*.go | sha256sum | cut -c1-12
}

binary_path() {
  local root=${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}
  echo "$root/kubelet-handlers-$k8s_version-$(build_hash)/kubelet-handlers"
}

cmd_build() {
  command -v go >/dev/null || die "go not found: kubelet's handlers are built from Go modules (Go >= 1.26)"
  local out
  out=$(binary_path)
  if [ -x "$out" ]; then
    say "build=cached path=$out"
    return
  fi
  mkdir -p "$(dirname "$out")"
  local start minor
  start=$(date +%s)
  (cd "$build_dir" && GOTOOLCHAIN=local go mod download) || die "go mod download failed"
  say "step=download seconds=$(($(date +%s) - start))"
  minor=${k8s_version#v1.}
  minor=${minor%%.*}
  # kube-probe/<major>.<minor> is the user agent kubelet's handlers send.
  local v=k8s.io/component-base/version
  local ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor"
  (
    cd "$build_dir"
    # nice: the build shares the machine; -trimpath: reproducible.
    CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly nice -n 10 \
      go build -trimpath -ldflags "$ldflags" -o "$out.tmp" .
  ) || die "go build failed (see the output above)"
  mv "$out.tmp" "$out"
  say "build=done path=$out seconds=$(($(date +%s) - start)) size_mib=$(($(stat -c %s "$out") / 1048576))"
}

cmd_path() {
  local out
  out=$(binary_path)
  [ -x "$out" ] || {
    echo "not built: run bash scripts/kubelet-handlers.sh build" >&2
    exit 1
  }
  echo "$out"
}

main() {
  case "${1:-}" in
  build) cmd_build ;;
  path) cmd_path ;;
  *)
    echo "usage: $0 build|path" >&2
    exit 2
    ;;
  esac
}

main "$@"
