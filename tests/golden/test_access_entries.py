"""A principal is in one EKS access entry only (every golden tree).

EKS refuses a second entry for a principal (CreateAccessEntry: ResourceInUseException; EKS user guide, creating
access entries), and it creates the EC2_LINUX entry of a managed node group's node role itself. So no access entry
gpufleet renders names a principal another entry names, or the role of a managed node group: the Karpenter nodes'
entry is for a role of their own (issue 41 item 2), where it once named the managed groups' role. A MultiKueue
manager's stack holds one entry on each worker besides its own cluster's.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.trees import resources

TREES = Path(__file__).resolve().parent / "trees"
TREE_DIRS = sorted(p.parent for p in TREES.glob("*/*/plan.json"))


@pytest.mark.parametrize("root", TREE_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_principal_is_in_two_access_entries(root: Path) -> None:
    entries = resources(root)
    # Per cluster: a MultiKueue manager's stack also holds one entry on each worker (clusterName the worker's).
    per_cluster = Counter(
        (str(r["inputs"]["clusterName"]), str(r["inputs"]["principalArn"]))
        for r in entries
        if r["type"] == "aws:eks/accessEntry:AccessEntry"
    )
    assert [p for p, n in per_cluster.items() if n > 1] == []
    principals = {p for _, p in per_cluster}
    managed_roles = {str(r["inputs"]["nodeRoleArn"]) for r in entries if r["type"] == "aws:eks/nodeGroup:NodeGroup"}
    assert managed_roles, "every tree has a managed node group (the system nodes or a GPU group)"
    assert sorted(managed_roles & set(principals)) == []
