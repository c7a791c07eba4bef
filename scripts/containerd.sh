#!/usr/bin/env bash
# A private containerd for probelet's integration tests and node agent.
#
#   bash scripts/containerd.sh up       # install packages if missing, start containerd, import images
#   bash scripts/containerd.sh down     # stop everything it started and remove its state
#   bash scripts/containerd.sh restart  # restart containerd only (containers keep running)
#   bash scripts/containerd.sh status   # print what is running
#
# Everything lives under <repo>/.run/containerd (git-ignored): config, root, state, the gRPC socket
# (.run/containerd/containerd.sock), CNI config and IPAM state. Pods get addresses on a private bridge
# (probelet0, 10.88.77.0/24). Registry hosts (a test registry's CA) are read from
# .run/containerd/certs.d/<host:port>/hosts.toml (scripts/registry.sh writes them).
# Images are built locally from busybox-static, no registry involved:
#   probelet.local/pause:1    the sandbox ("pause") image: busybox sleep
#   probelet.local/busybox:1  the test image: busybox with its applets (sh, httpd, nc, sleep, ...)
# Processes are found by pid file or by their command line naming our socket, never by name alone.
# Output is key=value lines. Needs root.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
base=${PROBELET_CONTAINERD_DIR:-$repo/.run/containerd}
sock=$base/containerd.sock
pidfile=$base/containerd.pid
config=$base/config.toml
log=$base/containerd.log
# Written by write_config: only a folder holding it is unmounted under and removed by `down`.
marker=$base/.probelet-containerd
namespace=k8s.io
network_name=probelet
bridge=probelet0
subnet=10.88.77.0/24
pause_image=probelet.local/pause:1
test_image=probelet.local/busybox:1
packages=(containerd runc containernetworking-plugins busybox-static iproute2 python3)
sandbox_ids="" # filled by cmd_down before the state goes

say() { echo "containerd.sh: $*"; }
die() {
  say "error=$(printf '%q' "$*")"
  exit 1
}

require_root() {
  [ "$(id -u)" = 0 ] || die "needs root (uid=$(id -u)): containerd, runc and CNI need CAP_SYS_ADMIN and CAP_NET_ADMIN"
}

# ---------------------------------------------------------------------------------------------------
# Packages

package_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    # python3 (image build, free port pick) may come from outside dpkg: any python3 on PATH will do.
    if [ "$p" = python3 ] && command -v python3 >/dev/null; then continue; fi
    package_installed "$p" || missing+=("$p")
  done
  if [ ${#missing[@]} = 0 ]; then
    say "packages=present"
    return
  fi
  say "packages=installing missing=$(IFS=,; echo "${missing[*]}")"
  command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # The Debian containerd package wants to start a system containerd; it is independent of ours
  # (other socket, root and state), so let it be.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  say "packages=installed"
}

# ---------------------------------------------------------------------------------------------------
# Process helpers

containerd_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && alive "$pid" || return 1
  # The pid must still be our containerd: its command line names our config file.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--config $config" || return 1
  echo "$pid"
}

answers() {
  [ -S "$sock" ] && timeout 5 ctr -a "$sock" version >/dev/null 2>&1
}

cri_loaded() {
  timeout 5 ctr -a "$sock" plugins ls 2>/dev/null | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }' | grep -qx ok
}

# Shims started by our containerd carry `-address <our socket>` on their command line.
our_shims() {
  local pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ -r "$d/cmdline" ] && alive "$pid" || continue
    if tr '\0' '\n' <"$d/cmdline" 2>/dev/null |
      awk -v s="$sock" 'NR == 1 && $0 !~ /containerd-shim/ { exit 1 } prev == "-address" && $0 == s { found = 1 } { prev = $0 } END { exit !found }'; then
      echo "$pid"
    fi
  done
}

# All descendants of a pid (children first listed after their parent).
descendants() {
  local parent=$1 child
  for child in $(cat /proc/"$parent"/task/*/children 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}

# A process counts as gone once it has exited, even while it waits as a zombie for its parent (PID 1
# here, which may reap late) to collect it.
alive() {
  local state
  state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

wait_gone() { # pid seconds
  local pid=$1 tries=$(($2 * 10))
  while alive "$pid" && [ "$tries" -gt 0 ]; do
    sleep 0.1
    tries=$((tries - 1))
  done
  ! alive "$pid"
}

# ---------------------------------------------------------------------------------------------------
# Configuration

# The folder is ours: it holds the marker. A folder from before the marker existed is adopted when
# its config is the one this script generates.
owned() {
  [ -f "$marker" ] && return 0
  if [ -f "$config" ] && head -n 1 "$config" | grep -qxF "# Generated by scripts/containerd.sh: a private containerd for probelet."; then
    echo "created by scripts/containerd.sh; \`down\` removes this folder" >"$marker"
    return 0
  fi
  return 1
}

write_config() {
  case "$base" in
    / | "" | "$HOME" | /root | /var | /var/lib | /run | /tmp | /etc | /usr) die "refusing PROBELET_CONTAINERD_DIR=$base" ;;
  esac
  if [ -d "$base" ] && [ -n "$(ls -A "$base" 2>/dev/null)" ] && ! owned; then
    die "$base exists, is not empty and has no $(basename "$marker"): not ours, refusing to use it"
  fi
  mkdir -p "$base"/{root,state,tmp,opt,cni/net.d,cni/ipam,images,certs.d}
  echo "created by scripts/containerd.sh; \`down\` removes this folder" >"$marker"
  # A free loopback port for the metrics endpoint, below the ephemeral range.
  local metrics_addr
  metrics_addr=$(python3 - <<'PY'
import random, socket
for port in random.sample(range(20000, 30000), 200):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(f"127.0.0.1:{port}")
    break
PY
  )
  echo "$metrics_addr" >"$base/metrics.addr"
  cat >"$config" <<EOF
# Generated by scripts/containerd.sh: a private containerd for probelet.
version = 2
root = "$base/root"
state = "$base/state"
temp = "$base/tmp"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[debug]
  level = "info"

# Prometheus metrics with per-RPC server handling times (bench/cri_latency.ts reads them).
[metrics]
  address = "$metrics_addr"
  grpc_histogram = true

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$base/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$pause_image"
    # Root here lacks CAP_SYS_RESOURCE: without this every RunPodSandbox fails in runc.
    restrict_oom_score_adj = true
    disable_apparmor = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "$base/state/runc"

    # Registry hosts (hosts.toml per registry, e.g. its CA): scripts/registry.sh writes here.
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$base/certs.d"

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$base/cni/net.d"
      max_conf_num = 1
EOF
  cat >"$base/cni/net.d/10-probelet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$network_name",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$subnet" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$base/cni/ipam"
      }
    },
    { "type": "loopback" }
  ]
}
EOF
}

# ---------------------------------------------------------------------------------------------------
# Images: an OCI layout with one uncompressed layer (a busybox rootfs) and two manifests.

build_images() {
  local out=$base/images/probelet-images.tar
  local arch
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  [ -x /bin/busybox ] || die "/bin/busybox missing (package busybox-static)"
  python3 - "$out" "$arch" "$pause_image" "$test_image" <<'PY'
import hashlib, io, json, subprocess, sys, tarfile

out, arch, pause_image, test_image = sys.argv[1:5]
epoch = 0  # fixed mtimes: the same busybox always yields the same digests

def add_dir(tar, name, mode=0o755):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, epoch
    tar.addfile(info)

def add_file(tar, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, epoch
    tar.addfile(info, io.BytesIO(data))

def add_link(tar, name, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, epoch
    tar.addfile(info)

applets = subprocess.run(["/bin/busybox", "--list-full"], check=True, capture_output=True,
                         text=True).stdout.split()
layer_buf = io.BytesIO()
with tarfile.open(fileobj=layer_buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
    dirs = {"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "tmp", "proc", "sys", "dev", "root",
            "var", "var/www", "run"}
    for d in sorted(dirs):
        add_dir(tar, d, 0o1777 if d == "tmp" else 0o755)
    with open("/bin/busybox", "rb") as f:
        add_file(tar, "bin/busybox", f.read(), 0o755)
    for path in sorted(set(applets)):
        if path == "bin/busybox" or path.split("/")[0] not in ("bin", "sbin", "usr"):
            continue
        add_link(tar, path, "/bin/busybox")
    add_file(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
    add_file(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    add_file(tar, "var/www/index.html", b"probelet ok\n")
layer = layer_buf.getvalue()

blobs = {}
def blob(data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}

layer_desc = blob(layer, "application/vnd.oci.image.layer.v1.tar")
diff_id = layer_desc["digest"]
env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]

def image(name, entrypoint, cmd):
    config = {
        "architecture": arch, "os": "linux",
        "config": {"Env": env, "Entrypoint": entrypoint, "Cmd": cmd, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "scripts/containerd.sh: busybox-static rootfs"}],
    }
    config_desc = blob(json.dumps(config, sort_keys=True).encode(),
                       "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer_desc]}
    desc = blob(json.dumps(manifest, sort_keys=True).encode(),
                "application/vnd.oci.image.manifest.v1+json")
    desc["annotations"] = {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.split(":")[-1]}
    desc["platform"] = {"architecture": arch, "os": "linux"}
    return desc

manifests = [image(pause_image, ["/bin/sleep"], ["2147483647"]), image(test_image, None, ["/bin/sh"])]
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}

with tarfile.open(out, mode="w", format=tarfile.PAX_FORMAT) as tar:
    add_file(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
    add_dir(tar, "blobs")
    add_dir(tar, "blobs/sha256")
    for digest, data in sorted(blobs.items()):
        add_file(tar, "blobs/sha256/" + digest.split(":")[1], data)
    add_file(tar, "index.json", json.dumps(index, sort_keys=True).encode())
print(f"containerd.sh: images_built={out} layer={diff_id} layer_bytes={len(layer)}")
PY
}

images_present() {
  local names
  names=$(ctr -a "$sock" -n "$namespace" images ls -q 2>/dev/null) || return 1
  grep -qxF "$pause_image" <<<"$names" && grep -qxF "$test_image" <<<"$names"
}

import_images() {
  if images_present; then
    say "images=present"
    return
  fi
  build_images
  ctr -a "$sock" -n "$namespace" images import "$base/images/probelet-images.tar" >/dev/null
  images_present || die "image import did not register $pause_image and $test_image"
  say "images=imported names=$pause_image,$test_image"
}

# ---------------------------------------------------------------------------------------------------
# Start / stop

start_containerd() {
  # Keep the previous run's log (one generation) for post-mortems; the new run appends to a fresh one.
  if [ -s "$log" ]; then mv -f "$log" "$log.1"; fi
  # setsid: containerd must outlive the shell (and any test) that started it. The inner shell writes
  # its own pid and then becomes containerd, so the pid file names containerd itself.
  setsid bash -c 'echo $$ >"$1"; exec containerd --config "$2" >>"$3" 2>&1 </dev/null' \
    _ "$pidfile" "$config" "$log" </dev/null >/dev/null 2>&1 &
  local tries=300 # 30 s
  while [ "$tries" -gt 0 ]; do
    if answers && cri_loaded; then
      say "containerd=started pid=$(cat "$pidfile") socket=$sock metrics=http://$(cat "$base/metrics.addr")/v1/metrics log=$log"
      return
    fi
    if [ -s "$pidfile" ] && ! alive "$(cat "$pidfile")"; then
      tail -n 20 "$log" >&2 || true
      die "containerd exited during startup (see $log)"
    fi
    sleep 0.1
    tries=$((tries - 1))
  done
  tail -n 20 "$log" >&2 || true
  die "containerd did not answer on $sock within 30s (see $log)"
}

stop_containerd() {
  local pid
  if ! pid=$(containerd_pid); then
    say "containerd=not-running"
    rm -f "$pidfile"
    return
  fi
  kill -TERM "$pid" 2>/dev/null || true
  if wait_gone "$pid" 15; then
    say "containerd=stopped pid=$pid signal=TERM"
  else
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 5 || die "containerd pid=$pid survived SIGKILL"
    say "containerd=stopped pid=$pid signal=KILL"
  fi
  rm -f "$pidfile"
}

# Kills every task of our namespace through containerd itself, so the shims clean up their mounts.
# CRI deletes the exited tasks on its own; whatever is left after 5 s is deleted here.
kill_tasks() {
  answers || return 0
  local tasks left n=0
  tasks=$(ctr -a "$sock" -n "$namespace" tasks ls -q 2>/dev/null || true)
  for t in $tasks; do
    timeout 10 ctr -a "$sock" -n "$namespace" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true
    n=$((n + 1))
  done
  for _ in $(seq 50); do
    left=$(ctr -a "$sock" -n "$namespace" tasks ls -q 2>/dev/null || true)
    [ -n "$left" ] || break
    sleep 0.1
  done
  for t in $left; do
    timeout 10 ctr -a "$sock" -n "$namespace" tasks delete -f "$t" >/dev/null 2>&1 || true
  done
  say "tasks_killed=$n"
}

# Whatever survived: our shims and everything they started.
kill_leftover_shims() {
  local shims victims n=0
  shims=$(our_shims)
  [ -n "$shims" ] || {
    say "shims_left=0"
    return
  }
  victims=""
  for s in $shims; do victims="$victims $(descendants "$s") $s"; done
  for v in $victims; do
    kill -KILL "$v" 2>/dev/null && n=$((n + 1)) || true
  done
  for v in $victims; do wait_gone "$v" 5 || say "warning=pid-$v-survived"; done
  say "shims_left=$(echo "$shims" | wc -w) processes_killed=$n"
}

unmount_all() {
  local n=0 mp
  if ! owned; then
    say "unmounted=0 skipped=no-marker path=$base"
    return
  fi
  # Deepest first; mountinfo escapes spaces as \040, which our paths do not contain.
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || say "warning=umount-failed path=$mp"
    n=$((n + 1))
  done < <(awk -v b="$base/" 'index($5, b) == 1 { print length($5) " " $5 }' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2-)
  say "unmounted=$n"
}

# Other worktrees' containerds started by this script share the bridge (same name, same subnet):
# deleting it under them would cut their running pods off. Ours is stopped by the time this runs.
other_containerds() {
  ps -eo pid=,args= | awk -v own="$config" \
    '$2 == "containerd" && $3 == "--config" && $4 ~ /\/\.run\/containerd\/config\.toml$/ && $4 != own { print $1 }'
}

delete_bridge() {
  local others
  others=$(other_containerds | tr '\n' ' ')
  if [ -n "$others" ]; then
    say "bridge=kept name=$bridge reason=in-use-by-other-containerd pids=${others% }"
  elif ip link show "$bridge" >/dev/null 2>&1; then
    ip link delete "$bridge"
    say "bridge=deleted name=$bridge"
  else
    say "bridge=absent name=$bridge"
  fi
}

# Files containerd 1.6 keeps outside the private folder: CNI result caches and shim sockets.
clean_outside() {
  local n=0
  # <network>-<sandbox id>-eth0 for our network, and CRI's cni-loopback-<sandbox id>-lo twin.
  local id
  for f in /var/lib/cni/results/"$network_name"-*; do
    [ -e "$f" ] || continue
    id=${f#/var/lib/cni/results/"$network_name"-}
    id=${id%-*}
    rm -f "$f" /var/lib/cni/results/cni-loopback-"$id"-lo && n=$((n + 1))
  done
  for id in $sandbox_ids; do
    [ -e /var/lib/cni/results/cni-loopback-"$id"-lo ] || continue
    rm -f /var/lib/cni/results/cni-loopback-"$id"-lo && n=$((n + 1))
  done
  # libcni creates these on first use; drop them again when nothing else put files there.
  rmdir /var/lib/cni/results 2>/dev/null || true
  rmdir /var/lib/cni 2>/dev/null || true
  # Shim sockets in /run/containerd/s: remove only those no process listens on any more.
  if [ -d /run/containerd/s ]; then
    local listening
    listening=$(awk 'NR > 1 && $8 != "" { print $8 }' /proc/net/unix | sed 's/^@//' | sort -u)
    for s in /run/containerd/s/*; do
      [ -S "$s" ] || continue
      grep -qxF "$s" <<<"$listening" || { rm -f "$s" && n=$((n + 1)); }
    done
    rmdir /run/containerd/s 2>/dev/null || true
    rmdir /run/containerd 2>/dev/null || true
  fi
  say "outside_files_removed=$n"
}

# Empty cgroups left by containers whose runc never got to delete them.
clean_cgroups() {
  local ids n=0
  ids=$(ls "$base/state/io.containerd.runtime.v2.task/$namespace" 2>/dev/null || true)
  [ -d "$base/root" ] && ids="$ids $(ls "$base/root/io.containerd.grpc.v1.cri/containers" \
    "$base/root/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null || true)"
  for id in $ids; do
    for d in /sys/fs/cgroup/*/"$namespace"/"$id" /sys/fs/cgroup/unified/"$namespace"/"$id"; do
      [ -d "$d" ] && rmdir "$d" 2>/dev/null && n=$((n + 1))
    done
  done
  say "cgroups_removed=$n"
}

# ---------------------------------------------------------------------------------------------------
# Commands

cmd_up() {
  require_root
  local start=$SECONDS
  install_packages
  if containerd_pid >/dev/null && answers; then
    owned || say "warning=no-marker path=$base"
    say "state=already-up pid=$(containerd_pid) socket=$sock"
    import_images
    return
  fi
  # A pid file without a live containerd, or a half-dead one: clean up first.
  if [ -e "$pidfile" ] || [ -n "$(our_shims)" ]; then
    say "state=stale cleaning=yes"
    cmd_down
  fi
  [ ${#sock} -lt 104 ] || die "socket path too long for a unix socket (${#sock} chars): $sock; set PROBELET_CONTAINERD_DIR"
  write_config
  start_containerd
  import_images
  say "state=up endpoint=unix://$sock seconds=$((SECONDS - start))"
}

cmd_down() {
  require_root
  sandbox_ids=$(ls "$base/root/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null || true)
  kill_tasks
  stop_containerd
  kill_leftover_shims
  unmount_all
  delete_bridge
  clean_cgroups
  clean_outside
  if [ -d "$base" ]; then
    if owned; then
      rm -rf "$base"
      say "state_dir=removed path=$base"
    else
      say "warning=state-dir-kept reason=no-marker path=$base"
    fi
  fi
  say "state=down"
}

cmd_restart() {
  require_root
  [ -f "$config" ] || die "not set up (no $config); run: bash scripts/containerd.sh up"
  stop_containerd
  start_containerd
  say "state=restarted endpoint=unix://$sock"
}

cmd_status() {
  local pid
  if pid=$(containerd_pid) && answers; then
    say "state=up pid=$pid endpoint=unix://$sock"
    say "version=$(ctr -a "$sock" version 2>/dev/null | awk '/Server:/ {s=1} s && /Version:/ {print $2; exit}')"
    say "images=$(ctr -a "$sock" -n "$namespace" images ls -q 2>/dev/null | paste -sd, -)"
    say "tasks=$(ctr -a "$sock" -n "$namespace" tasks ls -q 2>/dev/null | wc -l)"
  else
    say "state=down endpoint=unix://$sock"
  fi
  say "shims=$(our_shims | wc -w)"
  say "mounts=$(awk -v b="$base/" 'index($5, b) == 1' /proc/self/mountinfo | wc -l)"
  if ip link show "$bridge" >/dev/null 2>&1; then say "bridge=present name=$bridge"; else say "bridge=absent name=$bridge"; fi
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  restart) cmd_restart ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 up|down|restart|status" >&2
    exit 2
    ;;
esac
