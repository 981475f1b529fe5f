"""Small fleets for the network and storage tests, built through the real loader (schema, defaults, rules)."""

from __future__ import annotations

import textwrap

from gpufleet.plan.parts import RolloutPlan
from gpufleet.plan.rollout import build_plan
from gpufleet.rules.pipeline import load_fleet_text
from gpufleet.spec.fleet import Fleet

HEAD = """\
apiVersion: gpufleet/v1alpha1
kind: Fleet
metadata: {name: t}
cluster:
  name: t
  region: us-east-1
  kubernetesVersion: "1.33"
  admins:
    - principalArn: arn:aws:iam::111122223333:role/platform-admin
  systemNodes: {releaseVersion: "1.33.13-20260714"}
  network: {vpcId: vpc-0a1b2c3d, subnetIds: [subnet-0aa, subnet-0bb]}
versions:
  gpuOperator: {chart: v26.7.0}
  clusterAutoscaler: {chart: 9.59.0}
  kueue: {chart: 0.19.2}
  efaDevicePlugin: {chart: v0.5.30}
  networkOperator: {chart: 26.4.1}
  multus: {tag: v4.3.0}
  kubePrometheusStack: {chart: 88.5.3}
  nodeProblemDetector: {chart: 2.4.1}
  addons: {podIdentityAgent: v1.3.8-eksbuild.2}
"""


def group(
    name: str,
    instance: str,
    fabric: str = "None",
    *,
    taints: str = "[]",
    min_size: int = 2,
    max_size: int = 4,
    local: str = "None",
) -> str:
    zone = "\n    zone: use1-az4\n    subnetIds: [subnet-0aa]" if fabric == "EFA" else ""
    return f"""\
  - name: {name}
    instanceType: {instance}
    workloadClass: Training
    ami: {{type: AL2023_x86_64_NVIDIA, releaseVersion: "1.33.13-20260714"}}
    scaling: {{minSize: {min_size}, maxSize: {max_size}}}
    fabric: {fabric}
    localStorage: {local}
    taints: {taints}{zone}
"""


def fleet(groups: list[str], extra: str = "", env: str = "prod", through: str = "cost", head: str = HEAD) -> Fleet:
    text = (
        head
        + "nodeGroups:\n"
        + "".join(groups)
        + textwrap.dedent(extra)
        + f"environments:\n  {env}:\n    rollout: {{through: {through}}}\n"
    )
    return load_fleet_text(text, env=env).environments[env]


def plan(f: Fleet, env: str = "prod") -> RolloutPlan:
    return build_plan(f, env)


RDMA = """\
network:
  rdma:
    linkType: {link}
    networks:
      - {{name: rail0, interface: ibp24s0, hca: mlx5_0}}
      - {{name: rail1, interface: ibp41s0, hca: mlx5_1, ipPool: pool1}}
"""
