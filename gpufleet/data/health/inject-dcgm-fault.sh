#!/bin/bash
# gpufleet planted-fault injector: the native sidecar of the planted-fault Job, in the operator's DCGM image.
#
# While $FAULT_DIR/inject exists it injects a row-remap failure (DCGM_FI_DEV_ROW_REMAP_FAILED, field 395, value 1)
# into the node's host engine cache for GPU $GPU_ID (`dcgmi test --inject`, NVIDIA/DCGM dcgmi/CommandLineParser.cpp),
# every $INJECT_EVERY_SECONDS: the cache holds the latest sample, and the next real one (0) would end the fault.
# DCGM's own memory health watch then FAILs (modules/health/DcgmHealthWatch.cpp MonitorMemRowRemapFailures, code
# 80 DCGM_FR_ROW_REMAP_FAILURE), so the fault takes the path a real one does: DCGM's verdict, the dcgm-health
# sidecar, Node Problem Detector, the remediator, and the node monitoring agent's DCGMHealthCode80, which the EKS
# repair overrides leave to the remediator (NoAction). Nothing reaches the GPU: only the engine's cached value
# changes, and no gpufleet alert or dcgm-exporter counter reads field 395. When the flag goes it injects 0, and
# exits when $FAULT_DIR/done appears.
# [I] injection into the standalone host engine over TCP, and the watch on a GPU that supports row remapping
# (Ampere and newer): confirm on a node with the pinned DCGM.
set -u
FAULT_DIR="${FAULT_DIR:-/fault}"
DCGM_HOST="${DCGM_HOST:-nvidia-dcgm.gpu-operator.svc:5555}"
GPU_ID="${GPU_ID:-0}"
FIELD="${FIELD:-395}"
EVERY="${INJECT_EVERY_SECONDS:-5}"
ONCE="${ONCE:-false}"
injected=false
while [ ! -f "$FAULT_DIR/done" ]; do
  if [ -f "$FAULT_DIR/inject" ]; then
    dcgmi test --host "$DCGM_HOST" --inject --gpuid "$GPU_ID" -f "$FIELD" -v 1 >/dev/null 2>&1 \
      && injected=true && : > "$FAULT_DIR/injected"
  elif [ "$injected" = true ]; then
    dcgmi test --host "$DCGM_HOST" --inject --gpuid "$GPU_ID" -f "$FIELD" -v 0 >/dev/null 2>&1 \
      && injected=false && rm -f "$FAULT_DIR/injected" && : > "$FAULT_DIR/cleared"
  fi
  [ "$ONCE" = "true" ] && exit 0
  sleep "$EVERY"
done
