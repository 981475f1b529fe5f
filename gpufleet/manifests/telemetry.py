"""Telemetry (stage 2): what the foundation stage wires into the GPU Operator.

Interface used by gpufleet/builders/foundation.py (only when the telemetry stage is included):
- operator_telemetry_values(fleet) -> GPU Operator Helm values (dcgmExporter.config pointing at the metrics
  ConfigMap stage 2 creates). The foundation always sets dcgmExporter.serviceMonitor.enabled=false: stage 2
  creates the ServiceMonitor itself, after the Prometheus Operator CRDs exist.
"""

from __future__ import annotations

from typing import Any

from gpufleet.spec import Fleet


def operator_telemetry_values(fleet: Fleet) -> dict[str, Any]:
    return {}
