"""A test fiction: no EC2 GPU type has RDMA NICs (gpufleet.facts.catalog InstanceType.rdma_nics), so fabric RDMA is
refused on every instance type gpufleet ships. To keep exercising the Network Operator path kept for nodes that do
have them (tests/network, the network-rdma golden case), the suite pretends p5en.48xlarge has 8 ConnectX ports
(tests/conftest.py applies it before collection). tests/network/test_rdma_refusal.py checks the shipped table and the
refusal on it."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from gpufleet.facts import catalog

SHIPPED = catalog.CATALOG
PRETEND = "p5en.48xlarge"


def apply() -> None:
    catalog.CATALOG = MappingProxyType({**SHIPPED, PRETEND: replace(SHIPPED[PRETEND], rdma_nics=8)})
