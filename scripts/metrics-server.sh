#!/usr/bin/env bash
# metrics-server next to the local kube-apiserver (scripts/kube-apiserver.sh), so that `kubectl top
# node` and `kubectl top pod` work on a probelet node.
#
#   bash scripts/metrics-server.sh build   # build (or reuse) the pinned binary, print measurements
#   bash scripts/metrics-server.sh up      # build if needed, start it, register v1beta1.metrics.k8s.io
#   bash scripts/metrics-server.sh down    # stop what `up` started (by pid file), unregister it
#   bash scripts/metrics-server.sh status  # print what is running
#
# Pinned: sigs.k8s.io/metrics-server v0.8.0 (build module scripts/metrics-server). The binary is
# cached OUTSIDE the clone, keyed by that version and a hash of the build module:
#   ${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}/metrics-server-<version>-<hash>/
#
# `up` needs a running `scripts/kube-apiserver.sh up` (its admin kubeconfig, and the aggregation
# layer's front-proxy flags it sets) and the node address it put on its interface
# ($PROBELET_NODE_IP, default 10.88.99.1): metrics-server listens there (the API server will not
# proxy to loopback, and an EndpointSlice may not name it), on port $PROBELET_METRICS_SERVER_PORT
# (default 14443, moved up in steps of 10 while taken). It is registered as kubeadm's addon is: a
# Service kube-system/metrics-server without selector, an EndpointSlice naming that address, and
# the APIService v1beta1.metrics.k8s.io (insecureSkipTLSVerify: its serving certificate is
# self-signed). It reaches kubelets at their InternalIP and the port of their node status, with
# the admin client certificate, not verifying their serving certificates (--kubelet-insecure-tls:
# an agent without --tls-cert-file serves a self-signed one), scraping every
# $PROBELET_METRICS_RESOLUTION (default 10s, its minimum; each scrape times out after 5s). State lives under
# <repo>/.run/metrics-server (git-ignored). Output is key=value lines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=v0.8.0
build_dir=$repo/scripts/metrics-server
kube_base=${PROBELET_KUBE_DIR:-$repo/.run/kube-apiserver}
base=${PROBELET_METRICS_SERVER_DIR:-$repo/.run/metrics-server}
node_ip=${PROBELET_NODE_IP:-10.88.99.1}
port=${PROBELET_METRICS_SERVER_PORT:-14443}
resolution=${PROBELET_METRICS_RESOLUTION:-10s}
ready_timeout=${PROBELET_METRICS_SERVER_READY_TIMEOUT:-120}

say() { echo "metrics-server.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

binary_path() {
  local root=${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet} hash
  hash=$(cat "$build_dir/go.mod" "$build_dir/go.sum" | sha256sum | cut -c1-12)
  echo "$root/metrics-server-$version-$hash/metrics-server"
}

cmd_build() {
  command -v go >/dev/null || die "go not found: metrics-server is built from its Go module (Go >= 1.24)"
  local out start report
  out=$(binary_path)
  if [ -x "$out" ]; then
    say "build=cached path=$out"
    return
  fi
  mkdir -p "$(dirname "$out")"
  start=$(date +%s)
  (cd "$build_dir" && GOTOOLCHAIN=local go mod download) || die "go mod download failed"
  say "step=download seconds=$(($(date +%s) - start))"
  report=$out.time
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$report")
  (
    cd "$build_dir"
    # nice: the build shares the machine; -trimpath/-s -w: smaller, reproducible binaries.
    CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly nice -n 10 "${timer[@]}" \
      go build -trimpath -ldflags "-s -w" -o "$out.tmp" sigs.k8s.io/metrics-server/cmd/metrics-server
  ) || die "go build failed (see the output above)"
  mv "$out.tmp" "$out"
  local secs rss=0
  secs=$(($(date +%s) - start))
  [ -f "$report" ] && rss=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$report")
  say "built=metrics-server seconds=$secs peak_rss_mib=$((rss / 1024)) size_mib=$(($(stat -c %s "$out") / 1048576)) path=$out"
}

alive() { kill -0 "$1" 2>/dev/null; }

# The pid from the pid file when that process is alive and still ours (its command line names our
# state folder).
running_pid() {
  local pid
  [ -f "$base/metrics-server.pid" ] || return 1
  pid=$(cat "$base/metrics-server.pid")
  [ -n "$pid" ] && alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$base/" || return 1
  echo "$pid"
}

kubectl_admin() { kubectl --kubeconfig "$kube_base/admin.kubeconfig" --request-timeout 20s "$@"; }

port_taken() { (exec 3<>"/dev/tcp/$node_ip/$1") 2>/dev/null; }

registration() {
  cat <<YAML
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {app.kubernetes.io/managed-by: probelet-metrics-server-sh}
spec:
  ports:
  - {name: https, port: 443, protocol: TCP, targetPort: $port}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, app.kubernetes.io/managed-by: probelet-metrics-server-sh}
addressType: IPv4
endpoints:
- addresses: ["$node_ip"]
  conditions: {ready: true}
ports:
- {name: https, port: $port, protocol: TCP}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
  labels: {app.kubernetes.io/managed-by: probelet-metrics-server-sh}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: 443}
YAML
}

cmd_up() {
  command -v kubectl >/dev/null || die "kubectl not found: used to register the APIService"
  [ -f "$kube_base/admin.kubeconfig" ] || die "no kube-apiserver state in $kube_base: run scripts/kube-apiserver.sh up first"
  grep -q "$node_ip" /proc/net/fib_trie 2>/dev/null ||
    die "no interface has $node_ip (scripts/kube-apiserver.sh up adds it as root)"
  cmd_build
  local bin
  bin=$(binary_path)
  if pid=$(running_pid); then
    say "state=running pid=$pid"
    return
  fi
  mkdir -p "$base"
  local tries=0
  while port_taken "$port"; do
    [ -z "${PROBELET_METRICS_SERVER_PORT:-}" ] || die "port $node_ip:$port is taken"
    tries=$((tries + 1))
    [ "$tries" -le 20 ] || die "no free port found from 14443 upwards"
    port=$((port + 10))
  done
  local start
  start=$(date +%s%3N)
  "$bin" --kubeconfig "$kube_base/admin.kubeconfig" \
    --authentication-kubeconfig "$kube_base/admin.kubeconfig" \
    --authorization-kubeconfig "$kube_base/admin.kubeconfig" \
    --bind-address "$node_ip" --secure-port "$port" --cert-dir "$base/certs" \
    --kubelet-insecure-tls --kubelet-preferred-address-types InternalIP --kubelet-use-node-status-port \
    --metric-resolution "$resolution" --kubelet-request-timeout 5s >"$base/metrics-server.log" 2>&1 &
  echo $! >"$base/metrics-server.pid"
  echo "port=$port" >"$base/port"
  say "started=metrics-server pid=$(cat "$base/metrics-server.pid") url=https://$node_ip:$port"
  registration | kubectl_admin apply -f - >/dev/null || die "registering the APIService failed"
  for _ in $(seq 1 $((ready_timeout * 5))); do
    running_pid >/dev/null || {
      tail -n 30 "$base/metrics-server.log" >&2
      die "metrics-server exited during start-up (log: $base/metrics-server.log)"
    }
    if [ "$(kubectl_admin get apiservice v1beta1.metrics.k8s.io \
      -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" = True ]; then
      say "available=true ready_ms=$(($(date +%s%3N) - start))"
      return
    fi
    sleep 0.2
  done
  kubectl_admin get apiservice v1beta1.metrics.k8s.io -o yaml >&2 || true
  die "v1beta1.metrics.k8s.io not Available after ${ready_timeout}s (log: $base/metrics-server.log)"
}

cmd_down() {
  local pid
  if [ -f "$kube_base/admin.kubeconfig" ]; then
    kubectl_admin delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null 2>&1 || true
    kubectl_admin -n kube-system delete service,endpointslice metrics-server --ignore-not-found \
      >/dev/null 2>&1 || true
  fi
  if pid=$(running_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      alive "$pid" || break
      sleep 0.1
    done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    say "stopped=metrics-server pid=$pid"
  fi
  rm -rf "$base"
}

cmd_status() {
  local pid
  say "binary=$([ -x "$(binary_path)" ] && echo cached || echo missing) path=$(binary_path)"
  if pid=$(running_pid); then say "metrics-server=running pid=$pid $(cat "$base/port")"; else say "metrics-server=stopped"; fi
}

case ${1:-} in
build) cmd_build ;;
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
  echo "usage: $0 build|up|down|status" >&2
  exit 2
  ;;
esac
