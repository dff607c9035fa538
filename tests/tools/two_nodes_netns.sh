#!/usr/bin/env bash
# A two-"machine" run on one machine (docs/multinode.md): two network namespaces joined by a veth pair
# (private 10.77.N.0/24 addresses, nothing else touched) stand in for two hosts. minitorch-run reads a
# hostfile naming the two addresses, and mpirun starts the second host's daemon through an rsh agent
# that runs `ip netns exec` instead of ssh; the ranks talk over Open MPI's TCP transport only
# (btl tcp,self). Checked: the job trains, each rank ran in its own namespace. Needs root (ip netns).
# Usage: two_nodes_netns.sh BUILD_BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1 SRC=$2
id=$$ net=$((10 + $$ % 200))
A=mt-a-$id B=mt-b-$id VA=mtva$id VB=mtvb$id IPA=10.77.$net.1 IPB=10.77.$net.2
work=$(mktemp -d)
cleanup() { ip netns del "$A" 2> /dev/null || true; ip netns del "$B" 2> /dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
[[ $(id -u) == 0 ]] || { echo "two_nodes_netns: needs root (ip netns)" >&2; exit 1; }
ip netns add "$A" && ip netns add "$B"
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B"
ip -n "$A" addr add "$IPA/24" dev "$VA" && ip -n "$B" addr add "$IPB/24" dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up && ip -n "$B" link set "$VB" up

cat > "$work/agent" <<AGENT
#!/bin/sh
# Open MPI's rsh agent (plm_rsh_agent): HOST COMMAND... runs COMMAND "on" HOST, its namespace.
host=\$1; shift
case \$host in $IPA) ns=$A ;; $IPB) ns=$B ;; *) echo "agent: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent"
printf '%s slots=1\n%s slots=1\n' "$IPA" "$IPB" > "$work/hostfile"
for i in $(seq 80); do echo "In the beginning God created the heaven and the earth."; done > "$work/corpus.txt"
sed 's/"model": {"name": "baby"}/"model": {"name": "baby", "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16}/' \
  "$SRC/configs/ddp.json" > "$work/ddp.json"

# Each rank writes its namespace, then becomes minitorch-train.
out=$(ip netns exec "$A" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MINITORCH_NUM_THREADS=1 \
  OMPI_MCA_plm_rsh_agent="$work/agent" OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include="10.77.$net.0/24" \
  OMPI_MCA_oob_tcp_if_include="10.77.$net.0/24" timeout 120 \
  "$BIN/minitorch-run" --hostfile "$work/hostfile" sh -c \
  "ip netns identify \$\$ >> $work/where.txt; exec $BIN/minitorch-train --config $work/ddp.json --data $work/corpus.txt --steps 2 --out ''" 2>&1) ||
  { echo "$out"; echo "two_nodes_netns: the run failed" >&2; exit 1; }
echo "$out"
grep -q "x data ranks 2 |" <<< "$out" || { echo "two_nodes_netns: not 2 ranks" >&2; exit 1; }
grep -q "step     2/2" <<< "$out" || { echo "two_nodes_netns: no step 2" >&2; exit 1; }
where=$(sort "$work/where.txt" | tr '\n' ' ')
[[ $where == "$A $B " ]] || { echo "two_nodes_netns: ranks ran in '$where', expected $A and $B" >&2; exit 1; }
echo "two_nodes_netns: ok: one rank in each of $A ($IPA) and $B ($IPB), over TCP"
