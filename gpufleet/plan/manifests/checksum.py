"""A short content hash of a ConfigMap's data, put where a change must roll the ConfigMap's consumer (a pod
template annotation or environment variable): the Kubernetes provider patches ConfigMaps in place
(`enable_config_map_mutable`, gpufleet/plan/builders/cluster.py), and a process that read its config at start, or a
volume mounted with subPath, does not see the update."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


def data_sha256(data: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(data), sort_keys=True).encode()).hexdigest()[:16]
