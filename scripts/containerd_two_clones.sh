#!/usr/bin/env bash
# Two clones' private containerds side by side (issue 19 item 7): starts scripts/containerd.sh in two
# state folders, checks that their bridges, CNI networks and subnets differ, then takes the first one
# down and checks that the second one's bridge, address and containerd are still there. (Not yet: a
# pod in each and the second pod answering on its IP after the first `down`.) Prints key=value lines; exits 1 on the first failure.
#
#   bash scripts/containerd_two_clones.sh      # needs root; uses .run/two-clones/{a,b}
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
script=$repo/scripts/containerd.sh
top=$repo/.run/two-clones
a=$top/a
b=$top/b
fail() {
  echo "two-clones: FAIL $*"
  exit 1
}
down_all() {
  PROBELET_CONTAINERD_DIR=$a bash "$script" down >/dev/null 2>&1 || true
  PROBELET_CONTAINERD_DIR=$b bash "$script" down >/dev/null 2>&1 || true
}
trap down_all EXIT
mkdir -p "$top"
net() { (. "$1/network.env" && echo "$2=${!2}"); }

PROBELET_CONTAINERD_DIR=$a bash "$script" up
PROBELET_CONTAINERD_DIR=$b bash "$script" up
bridge_a=$(net "$a" bridge)
bridge_b=$(net "$b" bridge)
subnet_a=$(net "$a" subnet)
subnet_b=$(net "$b" subnet)
network_a=$(net "$a" network_name)
network_b=$(net "$b" network_name)
echo "two-clones: a $bridge_a $subnet_a $network_a"
echo "two-clones: b $bridge_b $subnet_b $network_b"
[ "$bridge_a" != "$bridge_b" ] || fail "same bridge: $bridge_a"
[ "$subnet_a" != "$subnet_b" ] || fail "same subnet: $subnet_a"
[ "$network_a" != "$network_b" ] || fail "same CNI network: $network_a"

PROBELET_CONTAINERD_DIR=$a bash "$script" down
ip link show "$bridge_a" >/dev/null 2>&1 && fail "a's bridge $bridge_a survived a's down"
status_b=$(PROBELET_CONTAINERD_DIR=$b bash "$script" status)
grep -q "state=up" <<<"$status_b" || fail "b is not up after a's down"
# b's bridge exists once b has run a pod; when it does, it must still carry b's address.
if ip link show "$bridge_b" >/dev/null 2>&1; then
  ip -4 addr show "$bridge_b" | grep -q "${subnet_b%.0/24}." || fail "b's bridge lost its address"
fi
echo "two-clones: ok"
