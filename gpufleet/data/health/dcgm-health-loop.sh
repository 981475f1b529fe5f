#!/bin/bash
# gpufleet DCGM health loop: the dcgm-health sidecar of the Node Problem Detector pod on each GPU node.
#
# Every DCGM_CHECK_INTERVAL_SECONDS it asks the node's DCGM hostengine (the GPU Operator's standalone nvidia-dcgm
# DaemonSet, reached through the nvidia-dcgm Service whose internalTrafficPolicy is Local, so always this node's)
# for its background health watches (`dcgmi health -c`) and runs `dcgmi diag -r DCGM_DIAG_LEVEL`. The verdict is
# written atomically to $STATE_DIR/result as "<code> <message>": 0 healthy, 1 unhealthy, 2 unknown (cannot
# reach DCGM). Node Problem Detector's plugin (check-dcgm-health.sh) turns it into the DCGMUnhealthy condition.
#
# MIG: dcgmi diag does not run on GPUs split into MIG instances (NVIDIA/DCGM#31, #94), so on a node whose host
# engine lists GPU instances (`dcgmi discovery -c`, the MIG hierarchy) only the health watches decide, and a diag
# that refuses because of MIG counts as skipped, not as Unknown: otherwise every healthy MIG node reads Unknown.
# [I] the "GPU Instance" rows of `dcgmi discovery -c` and a refusal naming MIG: confirm on a MIG node.
set -u
STATE_DIR="${STATE_DIR:-/var/run/gpufleet-health}"
DCGM_HOST="${DCGM_HOST:-nvidia-dcgm.gpu-operator.svc:5555}"
LEVEL="${DCGM_DIAG_LEVEL:-1}"
INTERVAL="${DCGM_CHECK_INTERVAL_SECONDS:-300}"
ONCE="${ONCE:-false}"
mkdir -p "$STATE_DIR"

write() { # code message
  local msg
  msg="$(printf '%s' "$2" | tr '\n' ' ' | cut -c1-400)"
  printf '%s %s\n' "$1" "$msg" > "$STATE_DIR/result.tmp" && mv -f "$STATE_DIR/result.tmp" "$STATE_DIR/result"
}

check() {
  local out rc diag drc failed
  # Background watches on all GPUs (a, all systems); setting them again is harmless and survives hostengine restarts.
  dcgmi health --host "$DCGM_HOST" -s a >/dev/null 2>&1
  out="$(dcgmi health --host "$DCGM_HOST" -c 2>&1)"; rc=$?
  if [ $rc -ne 0 ] && ! printf '%s' "$out" | grep -qi 'overall health'; then
    write 2 "cannot query DCGM at $DCGM_HOST: $out"; return
  fi
  if printf '%s' "$out" | grep -qiE 'overall health[^a-z]*fail'; then
    write 1 "dcgmi health: $(printf '%s' "$out" | grep -iE 'fail|error' | head -n 5)"; return
  fi
  if dcgmi discovery --host "$DCGM_HOST" -c 2>/dev/null | grep -q 'GPU Instance'; then
    write 0 "DCGM health watches pass; dcgmi diag skipped: MIG instances (diag does not run on MIG-partitioned GPUs)"; return
  fi
  diag="$(dcgmi diag --host "$DCGM_HOST" -r "$LEVEL" 2>&1)"; drc=$?
  failed="$(printf '%s' "$diag" | grep -E '\|[^|]*\|[[:space:]]*Fail' | head -n 5)"
  if [ -n "$failed" ]; then
    write 1 "dcgmi diag -r $LEVEL: $failed"; return
  fi
  if [ $drc -ne 0 ] && printf '%s' "$diag" | grep -q 'MIG'; then
    write 0 "DCGM health watches pass; dcgmi diag skipped: $(printf '%s' "$diag" | grep 'MIG' | head -n 1)"; return
  fi
  if [ $drc -ne 0 ] && ! printf '%s' "$diag" | grep -qE '\|[[:space:]]*(Pass|Skip|Warn)'; then
    write 2 "dcgmi diag -r $LEVEL did not run: $diag"; return
  fi
  write 0 "DCGM health watches and dcgmi diag -r $LEVEL pass"
}

while true; do
  check
  [ "$ONCE" = "true" ] && exit 0
  sleep "$INTERVAL"
done
