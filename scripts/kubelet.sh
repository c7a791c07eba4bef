#!/usr/bin/env bash
# The real kubelet v1.36.3 as a second node of the local control plane: the oracle of the
# differential suite (tests/e2e/differential_test.ts) and the reference of footprint measurements.
#
#   bash scripts/kubelet.sh build   # build (or reuse) the pinned kubelet binary, print measurements
#   bash scripts/kubelet.sh up      # build if needed, start its containerd and kubelet, wait for Ready
#   bash scripts/kubelet.sh down    # stop both, restore the sysctls/iptables, remove the state
#   bash scripts/kubelet.sh status  # print what is running
#   bash scripts/kubelet.sh env     # print what tests read (node name, CRI endpoint, pid file ...)
#
# Pinned: k8s.io/kubernetes v1.36.3's cmd/kubelet (build module scripts/kubelet: the kube-apiserver
# build module plus the kubelet tool and k8s.io/cri-streaming). The binary is cached OUTSIDE the
# clone, keyed by the version and a hash of the build module:
#   ${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}/kubelet-v1.36.3-<hash>/kubelet
#
# `up` needs root and a running `scripts/kube-apiserver.sh up` of this clone (its CA signs the node's
# client certificate, CN=system:node:$PROBELET_KUBELET_NODE_NAME, O=system:nodes). kubelet gets a
# containerd instance of its own (scripts/containerd.sh with PROBELET_CONTAINERD_DIR under our state
# folder: own socket, bridge and /24), because its housekeeping kills every sandbox on its runtime
# that it did not start: sharing probelet's containerd would kill probelet's pods. The node's
# InternalIP ($node_ip, 10.88.99.2-251 by clone) is a second address on kube-apiserver.sh's
# probelet-kube0, so the API server can dial the kubelet's port (logs, exec).
# The KubeletConfiguration ($base/config.yaml): cgroupfs driver (containerd 1.6 runs runc with
# SystemdCgroup = false and has no CRI RuntimeConfig to say so), failCgroupV1: false (cgroup v1
# hybrid here), a cgroupRoot of this clone's own, x509 client CA + webhook authn/authz as probelet's
# e2e runs, clusterDNS 10.96.0.10 / cluster.local as probelet's e2e passes them, serialized image
# pulls, eviction thresholds and image GC set so a busy CI machine evicts nothing, and
# makeIPTablesUtilChains: false (kubelet's KUBE-FIREWALL chain drops non-loopback traffic to
# 127.0.0.0/8, which other tests on this machine use).
# What kubelet changes on the node: the sysctls vm.overcommit_memory, kernel.panic and
# kernel.panic_on_oops (protectKernelDefaults false), cgroups under its cgroupRoot, and iptables
# chains (none with the setting above). `up` records the sysctls (machine-wide, in
# /run/probelet-kubelet, so that the last of several clones' kubelets restores them) and the
# iptables chains first; `down` writes the sysctls back, deletes chains that were not there before,
# removes the cgroups.
# kubelet logs at klog -v 2; PROBELET_KUBELET_V sets another level (4 for per-pod start-up timelines).
# State lives under <repo>/.run/kubelet (git-ignored). Ports: the kubelet's port from 10350 on the
# node IP and its healthz port (+1) on 127.0.0.1, moved up in steps of 10 while taken. Processes are
# stopped by pid file, never by name. Output is key=value lines.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
k8s_version=v1.36.3
build_dir=$repo/scripts/kubelet
base=${PROBELET_KUBELET_DIR:-$repo/.run/kubelet}
apiserver_base=${PROBELET_KUBE_DIR:-$repo/.run/kube-apiserver}
node_name=${PROBELET_KUBELET_NODE_NAME:-kubelet-oracle}
node_if=${PROBELET_NODE_IF:-probelet-kube0}
# This clone's node IP and cgroup root derive from the state folder's path, so two clones' kubelets
# never share one (kube-apiserver.sh's agent address is 10.88.99.1).
clone_hash=$(printf '%s' "$base" | sha256sum | cut -c1-6)
node_ip=${PROBELET_KUBELET_NODE_IP:-10.88.99.$((2 + 16#$clone_hash % 250))}
cgroup_root=/probelet-kubelet-$clone_hash
containerd_dir=$base/containerd
marker=$base/.probelet-kubelet
pidfile=$base/kubelet.pid
sysctls=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
shared=${PROBELET_KUBELET_SHARED_DIR:-/run/probelet-kubelet}
ready_timeout=${PROBELET_KUBELET_READY_TIMEOUT:-120}
port=10350
if [ -f "$base/ports" ]; then
  # shellcheck disable=SC1091
  . "$base/ports"
fi

say() { echo "kubelet.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

# ---------------------------------------------------------------------------------------------------
# Build

build_hash() { cat "$build_dir"/go.mod "$build_dir"/go.sum | sha256sum | cut -c1-12; }

binary_path() {
  local root=${PROBELET_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probelet}
  echo "$root/kubelet-$k8s_version-$(build_hash)/kubelet"
}

cmd_build() {
  command -v go >/dev/null || die "go not found: kubelet is built from Go modules (Go >= 1.26)"
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
  # The version kubelet reports (nodeInfo.kubeletVersion) comes from these ldflags.
  local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version
  local ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor"
  ldflags+=" -X $v.gitTreeState=clean -X $cv.gitVersion=$k8s_version -X $cv.gitMajor=1 -X $cv.gitMinor=$minor"
  local report=$out.time timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$report")
  (
    cd "$build_dir"
    # nice: the build shares the machine; -trimpath: reproducible.
    CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly nice -n 10 "${timer[@]}" \
      go build -trimpath -ldflags "$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kubelet
  ) || die "go build of k8s.io/kubernetes/cmd/kubelet failed (see the output above)"
  mv "$out.tmp" "$out"
  local rss=""
  [ -f "$report" ] && rss=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$report")
  say "build=done path=$out seconds=$(($(date +%s) - start)) size_mib=$(($(stat -c %s "$out") / 1048576))${rss:+ peak_rss_mib=$((rss / 1024))}"
}

# ---------------------------------------------------------------------------------------------------
# Process helpers

alive() { kill -0 "$1" 2>/dev/null; }

# The pid from our pid file when that process is alive and still ours: a kubelet whose command line
# names our state folder (false for a recycled pid).
kubelet_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && alive "$pid" || return 1
  [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = kubelet ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$base/" || return 1
  echo "$pid"
}

stop_kubelet() {
  local pid
  pid=$(kubelet_pid) || {
    rm -f "$pidfile"
    say "kubelet=not-running"
    return 0
  }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    say "stopped=kubelet pid=$pid signal=KILL"
  else
    say "stopped=kubelet pid=$pid"
  fi
  rm -f "$pidfile"
}

containerd_sh() { PROBELET_CONTAINERD_DIR=$containerd_dir bash "$repo/scripts/containerd.sh" "$@"; }

# The API server's URL and its admin/CA files, from kube-apiserver.sh of this clone.
apiserver_env() {
  local line
  while IFS= read -r line; do
    case $line in
    PROBELET_KUBE_SERVER=*) api_server=${line#*=} ;;
    esac
  done < <(PROBELET_KUBE_DIR=$apiserver_base bash "$repo/scripts/kube-apiserver.sh" env)
}

# curl as the cluster admin: admin <method> <path> [curl args...]; prints the HTTP code.
admin() {
  local method=$1 path=$2 pki=$apiserver_base/pki
  shift 2
  curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
    --key "$pki/admin.key" -X "$method" "$@" "$api_server$path"
}

# ---------------------------------------------------------------------------------------------------
# Node changes kubelet makes, recorded by `up` and undone by `down`

# The sysctls are the machine's, and several clones may run a kubelet at once: the values from
# before the first one are kept in $shared/sysctl.saved, each running clone holds a file in
# $shared/users, and the last one to go down writes the values back.
record_sysctls() {
  mkdir -p "$shared/users"
  prune_sysctl_users
  if [ -z "$(ls -A "$shared/users")" ]; then
    local key
    for key in "${sysctls[@]}"; do
      echo "$key=$(sysctl -n "$key")"
    done >"$shared/sysctl.saved"
    say "sysctls_recorded=$(paste -sd, "$shared/sysctl.saved")"
  fi
  echo "$base" >"$shared/users/$clone_hash"
}

# Users whose state folder is gone (a clone removed without `down`) hold nothing any more.
prune_sysctl_users() {
  local user
  for user in "$shared"/users/*; do
    [ -f "$user" ] || continue
    [ -f "$(cat "$user")/.probelet-kubelet" ] || rm -f "$user"
  done
}

restore_sysctls() {
  [ -f "$shared/users/$clone_hash" ] || return 0
  rm -f "$shared/users/$clone_hash"
  prune_sysctl_users
  if [ -n "$(ls -A "$shared/users" 2>/dev/null)" ]; then
    say "sysctls_kept=another-kubelet-runs users=$(ls "$shared/users" | paste -sd, -)"
    return 0
  fi
  local line restored=""
  while IFS= read -r line; do
    sysctl -q -w "$line" >/dev/null 2>&1 && restored="$restored${restored:+,}$line" ||
      say "warning=sysctl-not-restored setting=$line"
  done <"$shared/sysctl.saved"
  rm -f "$shared/sysctl.saved"
  rmdir "$shared/users" "$shared" 2>/dev/null || true
  say "sysctls_restored=$restored"
}

# Chains per table and family as "<cmd> <table> <chain>" lines.
iptables_chains() {
  local cmd table
  for cmd in iptables ip6tables; do
    command -v "$cmd" >/dev/null || continue
    for table in filter nat mangle; do
      "$cmd" -t "$table" -S 2>/dev/null | awk -v c="$cmd" -v t="$table" '$1 == "-N" { print c, t, $2 }'
    done
  done | sort
}

record_iptables() {
  [ -f "$base/iptables.saved" ] && return 0
  iptables_chains >"$base/iptables.saved"
  say "iptables_chains_recorded=$(wc -l <"$base/iptables.saved")"
}

# Deletes the chains kubelet added (present now, absent before `up`) and the rules jumping to them.
restore_iptables() {
  [ -f "$base/iptables.saved" ] || return 0
  local cmd table chain n=0
  while read -r cmd table chain; do
    [ -n "$chain" ] || continue
    # Rules elsewhere that jump to the chain go first ("-A X ... -j CHAIN" → "-D X ... -j CHAIN").
    "$cmd" -t "$table" -S 2>/dev/null | awk -v ch="$chain" '$1 == "-A" && $2 != ch && / -j / {
        for (i = 1; i <= NF; i++) if ($i == "-j" && $(i + 1) == ch) { print; next } }' |
      while read -r rule; do
        # shellcheck disable=SC2086
        "$cmd" -t "$table" ${rule/-A/-D} 2>/dev/null || true
      done
    "$cmd" -t "$table" -F "$chain" 2>/dev/null || true
    "$cmd" -t "$table" -X "$chain" 2>/dev/null && n=$((n + 1)) || say "warning=chain-not-deleted chain=$chain"
  done < <(comm -13 "$base/iptables.saved" <(iptables_chains))
  say "iptables_chains_deleted=$n"
}

# cgroupfs wants the root to exist in every hierarchy before it starts.
cgroup_root_up() {
  local d
  for d in /sys/fs/cgroup/*/; do
    mountpoint -q "$d" || continue
    mkdir -p "$d${cgroup_root#/}"
  done
  say "cgroup_root=$cgroup_root"
}

cgroup_root_down() {
  local d n=0 sub
  for d in /sys/fs/cgroup/*/"${cgroup_root#/}"; do
    [ -d "$d" ] || continue
    # Deepest first; a cgroup with tasks left refuses rmdir, which is reported.
    while read -r sub; do
      rmdir "$sub" 2>/dev/null && n=$((n + 1)) || say "warning=cgroup-not-removed path=$sub"
    done < <(find "$d" -depth -type d)
  done
  say "cgroups_removed=$n"
}

node_address_up() {
  ip -br addr show dev "$node_if" >/dev/null 2>&1 ||
    die "$node_if missing: \`bash scripts/kube-apiserver.sh up\` (as root) adds it"
  if ip -br addr show dev "$node_if" | grep -q " $node_ip/"; then
    say "node_ip=$node_ip interface=$node_if state=present"
    return
  fi
  ip addr add "$node_ip/32" dev "$node_if"
  touch "$base/node_ip.ours"
  say "node_ip=$node_ip interface=$node_if state=added"
}

node_address_down() {
  [ -f "$base/node_ip.ours" ] || return 0
  ip addr del "$node_ip/32" dev "$node_if" 2>/dev/null || true
  say "removed_address=$node_ip interface=$node_if"
}

# ---------------------------------------------------------------------------------------------------
# Up / down

port_taken() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

choose_ports() {
  local tries=0
  while port_taken "$node_ip" "$port" || port_taken 127.0.0.1 "$((port + 1))"; do
    tries=$((tries + 1))
    [ "$tries" -le 20 ] || die "no free ports found from 10350 upwards"
    port=$((port + 10))
  done
  printf 'port=%s\n' "$port" >"$base/ports"
}

# The node's client certificate, signed by the local control plane's CA, in a kubeconfig.
make_node_kubeconfig() {
  local pki=$base/pki ca=$apiserver_base/pki
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=system:node:$node_name/O=system:nodes" \
      -keyout node.key -out node.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in node.csr -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial \
      -CAserial "$pki/ca.srl" -days 2 -extfile client.ext -out node.crt 2>/dev/null
  )
  cat >"$base/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: probelet-test
  cluster:
    server: $api_server
    certificate-authority-data: $(base64 -w0 "$ca/ca.crt")
users:
- name: system:node:$node_name
  user:
    client-certificate-data: $(base64 -w0 "$pki/node.crt")
    client-key-data: $(base64 -w0 "$pki/node.key")
contexts:
- name: kubelet
  context:
    cluster: probelet-test
    user: system:node:$node_name
current-context: kubelet
EOF
}

write_config() {
  cat >"$base/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $((port + 1))
containerRuntimeEndpoint: unix://$containerd_dir/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: $cgroup_root
failCgroupV1: false
failSwapOn: false
podLogsDir: $base/pod-logs
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $apiserver_base/pki/ca.crt
authorization:
  mode: Webhook
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
serializeImagePulls: true
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
  imagefs.inodesFree: 1%
EOF
}

wait_ready() {
  local start=$1 binary=$2 code
  for _ in $(seq 1 $((ready_timeout * 5))); do
    if ! kubelet_pid >/dev/null; then
      tail -n 30 "$base/kubelet.log" >&2 || true
      die "kubelet exited during start-up (log: $base/kubelet.log)"
    fi
    if curl -sf "http://127.0.0.1:$((port + 1))/healthz" >/dev/null 2>&1; then
      code=$(curl -s --cacert "$apiserver_base/pki/ca.crt" --cert "$apiserver_base/pki/admin.crt" \
        --key "$apiserver_base/pki/admin.key" "$api_server/api/v1/nodes/$node_name" |
        python3 -c 'import json, sys
n = json.load(sys.stdin)
print(next((c["status"] for c in n.get("status", {}).get("conditions", []) if c["type"] == "Ready"), ""))' \
          2>/dev/null || true)
      # Ready, and its lease exists (kubelet creates it a few seconds after registering), which is
      # how tests tell a running kubelet from a Node left behind.
      if [ "$code" = True ] && [ "$(admin GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$node_name")" = 200 ]; then
        say "ready=true node=$node_name ms=$(($(date +%s%3N) - start)) version=$("$binary" --version | cut -d' ' -f2)"
        return
      fi
    fi
    sleep 0.2
  done
  tail -n 30 "$base/kubelet.log" >&2 || true
  die "node $node_name not Ready after ${ready_timeout}s (log: $base/kubelet.log)"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root (uid=$(id -u)): kubelet manages cgroups, mounts and sysctls"
  local missing="" tool
  for tool in go openssl curl python3 ip; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
  [ -z "$missing" ] || die "missing:$missing"
  [ -f "$apiserver_base/admin.kubeconfig" ] ||
    die "no local control plane at $apiserver_base: \`bash scripts/kube-apiserver.sh up\` first"
  cmd_build
  local binary
  binary=$(binary_path)
  apiserver_env
  if kubelet_pid >/dev/null; then
    say "state=running pid=$(kubelet_pid) node=$node_name"
    cmd_env
    return
  fi
  mkdir -p "$base"
  touch "$marker"
  containerd_sh up | sed 's/^/kubelet.sh: /'
  # The address first: a connect to an address not on this machine may be answered elsewhere.
  node_address_up
  choose_ports
  record_sysctls
  record_iptables
  cgroup_root_up
  make_node_kubeconfig
  write_config
  mkdir -p "$base/root" "$base/pod-logs"
  local start
  start=$(date +%s%3N)
  if [ -s "$base/kubelet.log" ]; then mv -f "$base/kubelet.log" "$base/kubelet.log.1"; fi
  # setsid: kubelet outlives the shell (and the test) that started it; the inner shell writes its
  # own pid and then becomes kubelet, so the pid file names kubelet itself.
  setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$pidfile" "$binary" \
    --config "$base/config.yaml" --kubeconfig "$base/kubelet.kubeconfig" \
    --root-dir "$base/root" --cert-dir "$base/root/pki" \
    --hostname-override "$node_name" --node-ip "$node_ip" --v "${PROBELET_KUBELET_V:-2}" \
    </dev/null >>"$base/kubelet.log" 2>&1 &
  for _ in $(seq 1 50); do
    [ -s "$pidfile" ] && break
    sleep 0.1
  done
  say "started=kubelet pid=$(cat "$pidfile") node=$node_name port=$node_ip:$port log=$base/kubelet.log"
  wait_ready "$start" "$binary"
  cmd_env
}

cmd_down() {
  [ "$(id -u)" = 0 ] || die "needs root (uid=$(id -u))"
  stop_kubelet
  if [ -f "$apiserver_base/admin.kubeconfig" ] && [ -f "$marker" ]; then
    apiserver_env
    # The Node object goes too, so a later run starts from a fresh registration.
    local code
    code=$(admin DELETE "/api/v1/nodes/$node_name" 2>/dev/null || true)
    say "node_deleted=$node_name http=$code"
  fi
  if [ -d "$containerd_dir" ]; then containerd_sh down | sed 's/^/kubelet.sh: /'; fi
  # Pod volumes kubelet mounted under its root dir (tmpfs for secrets and emptyDir Memory).
  local mp n=0
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || say "warning=umount-failed path=$mp"
    n=$((n + 1))
  done < <(awk -v b="$base/" 'index($5, b) == 1 { print length($5) " " $5 }' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2-)
  say "unmounted=$n"
  cgroup_root_down
  restore_sysctls
  restore_iptables
  node_address_down
  if [ -f "$marker" ]; then
    rm -rf "$base"
    say "removed=$base"
  fi
  say "state=down"
}

cmd_status() {
  local out pid
  out=$(binary_path)
  say "binary=$([ -x "$out" ] && echo cached || echo missing) path=$out"
  if pid=$(kubelet_pid); then say "kubelet=running pid=$pid node=$node_name port=$node_ip:$port"; else say "kubelet=stopped"; fi
  [ -d "$containerd_dir" ] && containerd_sh status | sed 's/^/kubelet.sh: /'
  return 0
}

cmd_env() {
  echo "PROBELET_KUBELET_NODE_NAME=$node_name"
  echo "PROBELET_KUBELET_NODE_IP=$node_ip"
  echo "PROBELET_KUBELET_PORT=$port"
  echo "PROBELET_KUBELET_CRI_ENDPOINT=unix://$containerd_dir/containerd.sock"
  echo "PROBELET_KUBELET_PID_FILE=$pidfile"
  echo "PROBELET_KUBELET_BINARY=$(binary_path)"
  echo "PROBELET_KUBELET_CONFIG=$base/config.yaml"
}

main() {
  case "${1:-}" in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *)
    echo "usage: $0 build|up|down|status|env" >&2
    exit 2
    ;;
  esac
}

# One line, so bash has read it whole before a long build starts: editing this file meanwhile
# cannot make it run what follows.
main "$@"; exit $?
