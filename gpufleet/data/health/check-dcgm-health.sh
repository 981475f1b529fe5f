#!/bin/sh
# Node Problem Detector custom plugin: exit 0 OK, 1 NonOK (sets the condition), 2 Unknown
# (kubernetes/node-problem-detector pkg/custompluginmonitor/types). Reads the verdict of the dcgm-health sidecar.
# DCGM's verdict alone decides: the health stage's planted fault is injected into DCGM (inject-dcgm-fault.sh),
# so it reaches this plugin the way a real fault does.
STATE_DIR="${STATE_DIR:-/var/run/gpufleet-health}"
MAX_AGE="${MAX_RESULT_AGE_SECONDS:-900}"
result="$STATE_DIR/result"
if [ ! -f "$result" ]; then
  echo "no DCGM health result yet"
  exit 2
fi
age=$(( $(date +%s) - $(stat -c %Y "$result") ))
if [ "$age" -gt "$MAX_AGE" ]; then
  echo "DCGM health result is ${age}s old (limit ${MAX_AGE}s)"
  exit 2
fi
read -r code message < "$result"
echo "$message"
case "$code" in
  0|1|2) exit "$code" ;;
  *) exit 2 ;;
esac
