#!/usr/bin/env bash
# client-go's SPDY exec and port-forward clients as a program: the oracle of
# tests/cri_streaming/go_client_test.ts (what kube-apiserver and kubectl run against a streaming
# server).
#
#   bash scripts/spdy-client.sh build   # build (or reuse) the binary, print its path
#   bash scripts/spdy-client.sh path    # print the binary's path (exit 1 when not built)
#
# Pinned: k8s.io/client-go v0.36.3 (build module scripts/spdy-client). The binary is cached
# OUTSIDE the clone, keyed by a hash of the build files:
#   ${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}/spdy-client-<hash>/
# Go modules come from Go's module cache (`go env GOMODCACHE`). Output is key=value lines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=$repo/scripts/spdy-client

say() { echo "spdy-client.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

binary_path() {
  local root=${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}
  local hash
  hash=$(cat "$build_dir"/go.mod "$build_dir"/go.sum "$build_dir"/*.go | sha256sum | cut -c1-12)
  echo "$root/spdy-client-$hash/spdy-client"
}

cmd_build() {
  command -v go >/dev/null || die "go not found: the oracle is built from Go modules (Go >= 1.26)"
  local out start
  out=$(binary_path)
  if [ -x "$out" ]; then
    say "build=cached path=$out"
    return
  fi
  mkdir -p "$(dirname "$out")"
  start=$(date +%s)
  (cd "$build_dir" && GOTOOLCHAIN=local go mod download) || die "go mod download failed"
  (
    cd "$build_dir"
    CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly nice -n 10 \
      go build -trimpath -ldflags "-s -w" -o "$out.tmp" .
  ) || die "go build failed (see the output above)"
  mv "$out.tmp" "$out"
  say "build=done path=$out seconds=$(($(date +%s) - start))"
}

cmd_path() {
  local out
  out=$(binary_path)
  [ -x "$out" ] || {
    echo "not built: run bash scripts/spdy-client.sh build" >&2
    exit 1
  }
  echo "$out"
}

case "${1:-}" in
build) cmd_build ;;
path) cmd_path ;;
*)
  echo "usage: $0 build|path" >&2
  exit 2
  ;;
esac
