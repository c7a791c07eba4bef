#!/usr/bin/env bash
# A real kube-apiserver + etcd for probelet's API-mode tests, built from Go modules.
#
#   bash scripts/kube-apiserver.sh build    # build (or reuse) the pinned binaries, print measurements
#   bash scripts/kube-apiserver.sh up       # build if needed, make certificates, start etcd + kube-apiserver
#   bash scripts/kube-apiserver.sh controllers  # also start kube-controller-manager + kube-scheduler
#   bash scripts/kube-apiserver.sh down     # stop what `up` started (by pid file) and remove its state
#   bash scripts/kube-apiserver.sh status   # print what is running
#   bash scripts/kube-apiserver.sh env      # print the paths tests read (KUBECONFIG files, server URL)
#
# Pinned: kube-apiserver, kube-controller-manager and kube-scheduler from k8s.io/kubernetes v1.36.3
# (build module scripts/kube-apiserver/apiserver,
# staging modules replaced by their published v0.36.3) and etcd v3.6.16 (scripts/kube-apiserver/etcd).
# Binaries are cached OUTSIDE the clone, keyed by those versions and a hash of the build modules:
#   ${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}/kube-<k8s>-etcd-<etcd>-<hash>/
# Go modules go to Go's own module cache (`go env GOMODCACHE`), also outside the clone.
#
# State lives under <repo>/.run/kube-apiserver (git-ignored): certificates (openssl), etcd data, logs,
# pid files, and three kubeconfigs:
#   admin.kubeconfig   CN=probelet-admin, O=system:masters (set-up and assertions only)
#   node.kubeconfig    CN=system:node:$PROBELET_NODE_NAME, O=system:nodes (what the agent runs with)
#   other-node.kubeconfig  CN=system:node:probelet-other, O=system:nodes (to check the node authorizer)
#   kubelet-client.crt/.key  CN=kube-apiserver-kubelet-client, O=kubeadm:cluster-admins: the API
#                      server's client certificate to nodes (--kubelet-client-certificate), signed by
#                      pki/ca.crt, which an agent trusts with --client-ca-file; RBAC binds the user to
#                      system:kubelet-api-admin, as kubeadm does
# and audit.log (metadata of every request, JSON lines) so tests can check no request was refused.
# The node's address: kube-apiserver reaches a node at its InternalIP
# (--kubelet-preferred-address-types=InternalIP,...) and refuses loopback, and the machine's own
# address is no test target, so `up` (as root) adds a dummy interface (else an empty bridge) $node_if with
# $node_ip/32; an agent runs with --node-ip $node_ip --address $node_ip. `down` removes it.
# PROBELET_KUBELET_CA=1 `up` also passes --kubelet-certificate-authority pki/ca.crt: the API server
# then verifies nodes' serving certificates (CSR-issued ones pass, self-signed ones do not).
# kube-apiserver runs with --authorization-mode=Node,RBAC and --enable-admission-plugins=NodeRestriction,
# serving on https://127.0.0.1:$PROBELET_KUBE_PORT, with kubeadm's aggregation-layer flags (a front
# proxy CA and client certificate, --enable-aggregator-routing: an APIService's Service is reached at
# its endpoints' addresses, there being no kube-proxy) for scripts/metrics-server.sh.
# Processes are stopped by pid file, never by name.
# Output is key=value lines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
k8s_version=v1.36.3
etcd_version=v3.6.16
build_dir=$repo/scripts/kube-apiserver
base=${PROBELET_KUBE_DIR:-$repo/.run/kube-apiserver}
node_name=${PROBELET_NODE_NAME:-probelet-node}
other_node=probelet-other
node_if=${PROBELET_NODE_IF:-probelet-kube0}
node_ip=${PROBELET_NODE_IP:-10.88.99.1}
# Below 32768 (ephemeral range), away from the ports other tests pick.
# Ports: PROBELET_KUBE_PORT / PROBELET_ETCD_PORT, else 16443 / 12379 (peer +1), moved up in steps
# of 10 by `up` while taken (another clone may run its own). The ports in use are kept in
# $base/ports, so `env` and `status` of a running instance print the right URL.
api_port=${PROBELET_KUBE_PORT:-16443}
etcd_port=${PROBELET_ETCD_PORT:-12379}
if [ -f "$base/ports" ]; then
  # shellcheck disable=SC1091
  . "$base/ports"
fi
etcd_peer_port=$((etcd_port + 1))
marker=$base/.probelet-kube-apiserver
ready_timeout=${PROBELET_KUBE_READY_TIMEOUT:-120}

say() { echo "kube-apiserver.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# Build

modules_hash() {
  cat "$build_dir"/apiserver/go.mod "$build_dir"/apiserver/go.sum "$build_dir"/etcd/go.mod \
    "$build_dir"/etcd/go.sum | sha256sum | cut -c1-12
}

cache_dir() {
  local root=${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}
  echo "$root/kube-$k8s_version-etcd-$etcd_version-$(modules_hash)"
}

# Prints "<seconds> <peak RSS KiB>" from a /usr/bin/time -v report.
time_report() {
  local wall rss
  wall=$(sed -nE 's/.*Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.*)/\1/p' "$1")
  rss=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$1")
  echo "$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%d", s }') $rss"
}

dir_bytes() { du -sb "$1" 2>/dev/null | cut -f1 || echo 0; }

# go build one tool of a build module into the cache, measured with /usr/bin/time -v when present.
build_one() {
  local name=$1 module_dir=$2 package=$3 ldflags=$4 out=$5
  local report=$out.time
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$report")
  say "building=$name package=$package"
  (
    cd "$module_dir"
    # nice: the build shares the machine; -trimpath/-s -w: smaller, reproducible binaries.
    CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly nice -n 10 "${timer[@]}" \
      go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$package"
  ) || die "go build of $package failed (see the output above)"
  mv "$out.tmp" "$out"
  if [ -f "$report" ]; then
    read -r secs rss < <(time_report "$report")
    say "built=$name seconds=$secs peak_rss_mib=$((rss / 1024)) size_mib=$(($(stat -c %s "$out") / 1048576))"
  fi
}

cmd_build() {
  command -v go >/dev/null || die "go not found: kube-apiserver and etcd are built from Go modules (Go >= 1.26)"
  local cache
  cache=$(cache_dir)
  if [ -x "$cache/kube-apiserver" ] && [ -x "$cache/etcd" ] && [ -x "$cache/kube-controller-manager" ] &&
    [ -x "$cache/kube-scheduler" ]; then
    say "build=cached dir=$cache"
    return
  fi
  mkdir -p "$cache"
  local modcache before after start
  modcache=$(go env GOMODCACHE)
  before=$(dir_bytes "$modcache/cache/download")
  start=$(date +%s)
  say "step=download modcache=$modcache"
  (cd "$build_dir/etcd" && GOTOOLCHAIN=local go mod download) || die "go mod download (etcd) failed"
  (cd "$build_dir/apiserver" && GOTOOLCHAIN=local go mod download) || die "go mod download (kube-apiserver) failed"
  after=$(dir_bytes "$modcache/cache/download")
  say "downloaded_mib=$(((after - before) / 1048576)) seconds=$(($(date +%s) - start)) modcache_download_mib=$((after / 1048576))"

  local minor=${k8s_version#v1.}
  minor=${minor%%.*}
  local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version
  local k8s_ldflags="-X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  k8s_ldflags+=" -X $cv.gitVersion=$k8s_version -X $cv.gitMajor=1 -X $cv.gitMinor=$minor"
  [ -x "$cache/etcd" ] || build_one etcd "$build_dir/etcd" go.etcd.io/etcd/server/v3 "" "$cache/etcd"
  local component
  for component in kube-apiserver kube-controller-manager kube-scheduler; do
    [ -x "$cache/$component" ] && continue
    build_one "$component" "$build_dir/apiserver" "k8s.io/kubernetes/cmd/$component" "$k8s_ldflags" \
      "$cache/$component"
  done
  say "build=done dir=$cache total_seconds=$(($(date +%s) - start))"
}

# ---------------------------------------------------------------------------------------------------
# Process helpers

alive() { kill -0 "$1" 2>/dev/null; }

# Prints the pid from a pid file when that process is alive and is still ours: the binary has the
# component's name and its command line names our state folder (true across rebuilds, false for a
# recycled pid).
running_pid() {
  local pidfile=$1 binary=$2 pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && alive "$pid" || return 1
  [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = "$(basename "$binary")" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$base/" || return 1
  echo "$pid"
}

stop_pid() {
  local name=$1 pidfile=$2 binary=$3 pid
  pid=$(running_pid "$pidfile" "$binary") || {
    rm -f "$pidfile"
    return 0
  }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    say "stopped=$name pid=$pid signal=KILL"
  else
    say "stopped=$name pid=$pid"
  fi
  rm -f "$pidfile"
}

# ---------------------------------------------------------------------------------------------------
# Certificates (openssl): one CA signs the serving certificate and every client certificate.

make_certs() {
  command -v openssl >/dev/null || die "openssl not found: needed for the CA, serving and client certificates"
  local pki=$base/pki
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=probelet-test-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key \
      -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default\nextendedKeyUsage=serverAuth\n' \
      >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  client_cert admin probelet-admin system:masters
  client_cert node "system:node:$node_name" system:nodes
  client_cert other-node "system:node:$other_node" system:nodes
  client_cert controller-manager system:kube-controller-manager ""
  client_cert scheduler system:kube-scheduler ""
  client_cert kubelet-client kube-apiserver-kubelet-client kubeadm:cluster-admins
  front_proxy_certs
}

# The aggregation layer's front proxy (kubeadm's front-proxy-ca and front-proxy-client): the API
# server proxies to an extension API server (metrics-server) with this client certificate and the
# user in X-Remote-* headers, which that server trusts through --requestheader-client-ca-file
# (published in kube-system/extension-apiserver-authentication). A CA of its own, as kubeadm
# makes: a client certificate from the main CA must not be able to assert headers.
front_proxy_certs() {
  local pki=$base/pki
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=probelet-front-proxy-ca" \
      -keyout front-proxy-ca.key -out front-proxy-ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" -keyout front-proxy-client.key \
      -out front-proxy-client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >front-proxy-client.ext
    openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key \
      -CAcreateserial -days 2 -extfile front-proxy-client.ext -out front-proxy-client.crt 2>/dev/null
  )
}

# The node's InternalIP on a dummy interface (root only; without it, tests that need the API server
# to reach a node say so and skip).
node_address_up() {
  if ip -br addr show dev "$node_if" 2>/dev/null | grep -q "$node_ip/"; then
    say "node_ip=$node_ip interface=$node_if state=present"
    return
  fi
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    say "node_ip= reason=$(printf '%q' "adding $node_if needs root and iproute2")"
    return
  fi
  # A dummy interface, or where the kernel has no dummy driver, a bridge without ports.
  ip link add "$node_if" type dummy 2>/dev/null || ip link add "$node_if" type bridge
  ip addr add "$node_ip/32" dev "$node_if"
  ip link set "$node_if" up
  touch "$base/node_if.ours"
  say "node_ip=$node_ip interface=$node_if state=added"
}

node_address_down() {
  [ -f "$base/node_if.ours" ] || return 0
  ip link del "$node_if" 2>/dev/null || true
  say "removed_interface=$node_if"
}

# kubeadm's binding: the API server's kubelet client may use every kubelet API.
kubelet_api_admin_binding() {
  local pki=$base/pki code
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
    --key "$pki/admin.key" -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kube-apiserver-kubelet-api-admin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:kubelet-api-admin"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"kube-apiserver-kubelet-client"}]}' \
    "https://127.0.0.1:$api_port/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")
  case $code in
  201 | 409) ;;
  *) die "creating the kubelet-api-admin ClusterRoleBinding answered HTTP $code" ;;
  esac
  say "clusterrolebinding=kube-apiserver-kubelet-api-admin user=kube-apiserver-kubelet-client"
}

# client_cert <file stem> <CN> <O>
client_cert() {
  local pki=$base/pki
  (
    cd "$pki"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$2${3:+/O=$3}" -keyout "$1.key" -out "$1.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext \
      -out "$1.crt" 2>/dev/null
  )
  write_kubeconfig "$1" "$2"
}

# A kubeconfig with the certificates inline (*-data), as `kind get kubeconfig` writes them.
write_kubeconfig() {
  local stem=$1 user=$2 pki=$base/pki
  cat >"$base/$stem.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: probelet-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$pki/$stem.crt")
    client-key-data: $(base64 -w0 "$pki/$stem.key")
contexts:
- name: $stem
  context:
    cluster: probelet-test
    user: $user
current-context: $stem
EOF
}

# ---------------------------------------------------------------------------------------------------
# Up / down

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

choose_ports() {
  local tries=0
  while port_taken "$api_port" || port_taken "$((api_port + 1))" || port_taken "$((api_port + 2))" ||
    port_taken "$etcd_port" || port_taken "$((etcd_port + 1))"; do
    [ -z "${PROBELET_KUBE_PORT:-}" ] && [ -z "${PROBELET_ETCD_PORT:-}" ] ||
      die "port $api_port, $etcd_port or $((etcd_port + 1)) is taken (set PROBELET_KUBE_PORT/PROBELET_ETCD_PORT)"
    tries=$((tries + 1))
    [ "$tries" -le 20 ] || die "no free ports found from 16443/12379 upwards"
    api_port=$((api_port + 10))
    etcd_port=$((etcd_port + 10))
  done
  etcd_peer_port=$((etcd_port + 1))
  printf 'api_port=%s\netcd_port=%s\n' "$api_port" "$etcd_port" >"$base/ports"
}

wait_ready() {
  local start=$1 pki=$base/pki
  for _ in $(seq 1 $((ready_timeout * 5))); do
    if ! running_pid "$base/kube-apiserver.pid" "$(cache_dir)/kube-apiserver" >/dev/null; then
      tail -n 30 "$base/kube-apiserver.log" >&2 || true
      die "kube-apiserver exited during start-up (log: $base/kube-apiserver.log)"
    fi
    if curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
      "https://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then
      say "ready=true url=https://127.0.0.1:$api_port cold_start_ms=$(($(date +%s%3N) - start))"
      return
    fi
    sleep 0.2
  done
  tail -n 30 "$base/kube-apiserver.log" >&2 || true
  die "kube-apiserver not ready after ${ready_timeout}s (log: $base/kube-apiserver.log)"
}

cmd_up() {
  command -v curl >/dev/null || die "curl not found: used to wait for /readyz"
  cmd_build
  local cache
  cache=$(cache_dir)
  if running_pid "$base/kube-apiserver.pid" "$cache/kube-apiserver" >/dev/null; then
    say "state=running url=https://127.0.0.1:$api_port dir=$base"
    return
  fi
  cmd_down >/dev/null
  mkdir -p "$base"
  touch "$marker"
  choose_ports
  make_certs
  local start
  start=$(date +%s%3N)
  local pki=$base/pki
  "$cache/etcd" --name probelet --data-dir "$base/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "probelet=http://127.0.0.1:$etcd_peer_port" \
    --quota-backend-bytes 268435456 --log-level warn >"$base/etcd.log" 2>&1 &
  echo $! >"$base/etcd.pid"
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && break
    running_pid "$base/etcd.pid" "$cache/etcd" >/dev/null || {
      tail -n 20 "$base/etcd.log" >&2
      die "etcd exited during start-up (log: $base/etcd.log)"
    }
    sleep 0.1
  done
  say "started=etcd pid=$(cat "$base/etcd.pid") url=http://127.0.0.1:$etcd_port ready_ms=$(($(date +%s%3N) - start))"
  # Audit log (metadata only): tests read it to check that a node's requests were never refused.
  printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n- level: Metadata\n' \
    >"$base/audit-policy.yaml"
  # PROBELET_KUBELET_CA=1: the API server verifies nodes' serving certificates against the cluster
  # CA (--kubelet-certificate-authority), as for CSR-issued ones (--rotate-server-certificates);
  # self-signed agents then cannot be reached, so it is off by default (kube-apiserver's default:
  # no verification).
  local kubelet_ca=()
  if [ "${PROBELET_KUBELET_CA:-0}" = 1 ]; then
    kubelet_ca=(--kubelet-certificate-authority "$pki/ca.crt")
  fi
  "$cache/kube-apiserver" \
    --audit-policy-file "$base/audit-policy.yaml" --audit-log-path "$base/audit.log" \
    --audit-log-maxsize 200 --audit-log-maxbackup 1 \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --client-ca-file "$pki/ca.crt" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/kubelet-client.crt" --kubelet-client-key "$pki/kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP \
    "${kubelet_ca[@]}" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-cluster-ip-range 10.96.0.0/24 \
    --allow-privileged=true --profiling=false \
    --requestheader-client-ca-file "$pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$pki/front-proxy-client.crt" --proxy-client-key-file "$pki/front-proxy-client.key" \
    --enable-aggregator-routing=true \
    --cert-dir "$base/cert-dir" >"$base/kube-apiserver.log" 2>&1 &
  echo $! >"$base/kube-apiserver.pid"
  say "started=kube-apiserver pid=$(cat "$base/kube-apiserver.pid") kubelet_ca=${PROBELET_KUBELET_CA:-0}"
  wait_ready "$start"
  default_service_accounts
  kubelet_api_admin_binding
  node_address_up
  cmd_env
}

# `controllers`: kube-controller-manager (node lifecycle: Ready=Unknown after a missed lease,
# taint-based eviction; CSR signing with the test CA; service accounts; garbage collection) and
# kube-scheduler next to a running kube-apiserver, each with its own client certificate and
# --leader-elect=false; secure ports are the API port + 1 and + 2. Separate from `up` because they
# change objects behind a test's back (node annotations, evictions): the conformance tests need the
# API server alone, the cluster e2e needs them. PROBELET_KUBE_NODE_MONITOR_GRACE (default 40s) is how
# long a node may miss its lease before it turns Ready=Unknown.
cmd_controllers() {
  local cache pki=$base/pki
  cache=$(cache_dir)
  running_pid "$base/kube-apiserver.pid" "$cache/kube-apiserver" >/dev/null ||
    die "kube-apiserver is not running: \`$0 up\` first"
  if running_pid "$base/kube-controller-manager.pid" "$cache/kube-controller-manager" >/dev/null; then
    say "controllers=running"
    return
  fi
  "$cache/kube-controller-manager" \
    --kubeconfig "$base/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$base/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$base/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$((api_port + 1))" --leader-elect=false \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --root-ca-file "$pki/ca.crt" --service-account-private-key-file "$pki/sa.key" \
    --use-service-account-credentials \
    --node-monitor-grace-period "${PROBELET_KUBE_NODE_MONITOR_GRACE:-40s}" \
    --cert-dir "$base/cert-dir-kcm" >"$base/kube-controller-manager.log" 2>&1 &
  echo $! >"$base/kube-controller-manager.pid"
  "$cache/kube-scheduler" \
    --kubeconfig "$base/scheduler.kubeconfig" \
    --authentication-kubeconfig "$base/scheduler.kubeconfig" \
    --authorization-kubeconfig "$base/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$((api_port + 2))" --leader-elect=false \
    --cert-dir "$base/cert-dir-scheduler" >"$base/kube-scheduler.log" 2>&1 &
  echo $! >"$base/kube-scheduler.pid"
  say "started=kube-controller-manager pid=$(cat "$base/kube-controller-manager.pid") started=kube-scheduler pid=$(cat "$base/kube-scheduler.pid")"
  # Healthy = serving /healthz on their own (self-signed) ports, so tests do not race their start.
  local start port
  start=$(date +%s%3N)
  for port in "$((api_port + 1))" "$((api_port + 2))"; do
    for _ in $(seq 1 300); do
      curl -skf "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
      sleep 0.2
    done
    curl -skf "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 ||
      die "controller on port $port not healthy after 60s (logs: $base/kube-controller-manager.log, $base/kube-scheduler.log)"
  done
  say "controllers=healthy ms=$(($(date +%s%3N) - start))"
}

# The controller-manager creates each namespace's `default` ServiceAccount, but only a moment after
# start; the ServiceAccount admission plugin refuses pods until then, so `up` creates them at once.
default_service_accounts() {
  local pki=$base/pki ns code
  for ns in default kube-system kube-public kube-node-lease; do
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
      --key "$pki/admin.key" -X POST -H 'Content-Type: application/json' \
      -d '{"metadata":{"name":"default"}}' \
      "https://127.0.0.1:$api_port/api/v1/namespaces/$ns/serviceaccounts")
    case $code in
    201 | 409) ;;
    *) die "creating the default ServiceAccount in $ns answered HTTP $code" ;;
    esac
  done
  say "serviceaccounts=default namespaces=default,kube-system,kube-public,kube-node-lease"
}

cmd_down() {
  local cache
  cache=$(cache_dir)
  stop_pid kube-scheduler "$base/kube-scheduler.pid" "$cache/kube-scheduler"
  stop_pid kube-controller-manager "$base/kube-controller-manager.pid" "$cache/kube-controller-manager"
  stop_pid kube-apiserver "$base/kube-apiserver.pid" "$cache/kube-apiserver"
  stop_pid etcd "$base/etcd.pid" "$cache/etcd"
  node_address_down
  # Only a folder that `up` marked as ours is removed.
  if [ -f "$marker" ]; then
    rm -rf "$base"
    say "removed=$base"
  fi
}

cmd_status() {
  local cache
  cache=$(cache_dir)
  say "binaries=$([ -x "$cache/kube-apiserver" ] && [ -x "$cache/etcd" ] && echo cached || echo missing) dir=$cache"
  local pid
  if pid=$(running_pid "$base/etcd.pid" "$cache/etcd"); then say "etcd=running pid=$pid"; else say "etcd=stopped"; fi
  if pid=$(running_pid "$base/kube-apiserver.pid" "$cache/kube-apiserver"); then
    say "kube-apiserver=running pid=$pid url=https://127.0.0.1:$api_port"
  else
    say "kube-apiserver=stopped"
  fi
  local c
  for c in kube-controller-manager kube-scheduler; do
    if pid=$(running_pid "$base/$c.pid" "$cache/$c"); then say "$c=running pid=$pid"; else say "$c=stopped"; fi
  done
}

cmd_env() {
  echo "PROBELET_KUBE_SERVER=https://127.0.0.1:$api_port"
  echo "PROBELET_KUBE_ADMIN_KUBECONFIG=$base/admin.kubeconfig"
  echo "PROBELET_KUBE_NODE_KUBECONFIG=$base/node.kubeconfig"
  echo "PROBELET_KUBE_OTHER_NODE_KUBECONFIG=$base/other-node.kubeconfig"
  echo "PROBELET_NODE_NAME=$node_name"
  echo "PROBELET_KUBE_AUDIT_LOG=$base/audit.log"
  echo "PROBELET_KUBE_KUBELET_CLIENT_CA=$base/pki/ca.crt"
  if ip -br addr show dev "$node_if" 2>/dev/null | grep -q "$node_ip/"; then
    echo "PROBELET_NODE_IP=$node_ip"
  fi
}

main() {
  case "${1:-}" in
  build) cmd_build ;;
  up) cmd_up ;;
  controllers) cmd_controllers ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 build|up|controllers|down|status|env" >&2
    exit 2
    ;;
  esac
}

# One line, so bash has read it whole before a long build starts: editing this file meanwhile
# cannot make it run what follows.
main "$@"; exit $?
