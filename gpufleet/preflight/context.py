"""What the checks read from AWS, fetched once per run and shared: instance types, zones, offerings, subnets.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/context.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from gpufleet.preflight.clients import ApiError, Clients, call, paginate
from gpufleet.spec.fleet import Fleet, NodeGroup

T = TypeVar("T")


class Context:
    def __init__(self, fleet: Fleet, clients: Clients) -> None:
        self.fleet = fleet
        self.clients = clients
        self.region = fleet.cluster.region
        self._memo: dict[str, Any] = {}

    def _once(self, key: str, load: Callable[[], T]) -> T:
        if key not in self._memo:
            try:
                self._memo[key] = load()
            except ApiError as exc:
                self._memo[key] = exc
        value = self._memo[key]
        if isinstance(value, ApiError):
            raise value
        result: T = value
        return result

    def instance_types(self) -> Mapping[str, Mapping[str, Any]]:
        """EC2's description of every instance type the fleet names that exists in the region, by name."""

        def load() -> dict[str, Mapping[str, Any]]:
            names = sorted({t for g in self.fleet.node_groups for t in g.instance_types})
            if not names:
                return {}
            # A filter (not InstanceTypes=[...]) so one unknown name does not fail the whole call.
            found = paginate(
                self.clients.ec2,
                "describe_instance_types",
                "InstanceTypes",
                Filters=[{"Name": "instance-type", "Values": names}],
            )
            return {str(t["InstanceType"]): t for t in found}

        return self._once("instance_types", load)

    def zone_names(self) -> Mapping[str, str]:
        """Zone ID -> zone name for the region's zones (names differ per account; IDs do not)."""

        def load() -> dict[str, str]:
            zones = call(self.clients.ec2, "describe_availability_zones")["AvailabilityZones"]
            return {str(z["ZoneId"]): str(z["ZoneName"]) for z in zones}

        return self._once("zones", load)

    def zone_label(self, zone_id: str) -> str:
        """`use1-az4 (us-east-1d)`; the name is what this account sees."""
        try:
            name = self.zone_names().get(zone_id)
        except ApiError:
            name = None
        return f"{zone_id} ({name})" if name else zone_id

    def offerings(self) -> Mapping[str, frozenset[str]]:
        """Instance type -> the zone IDs where EC2 offers it."""

        def load() -> dict[str, frozenset[str]]:
            names = sorted({t for g in self.fleet.node_groups for t in g.instance_types})
            if not names:
                return {}
            found = paginate(
                self.clients.ec2,
                "describe_instance_type_offerings",
                "InstanceTypeOfferings",
                LocationType="availability-zone-id",
                Filters=[{"Name": "instance-type", "Values": names}],
            )
            zones: dict[str, set[str]] = {}
            for offering in found:
                zones.setdefault(str(offering["InstanceType"]), set()).add(str(offering["Location"]))
            return {name: frozenset(ids) for name, ids in zones.items()}

        return self._once("offerings", load)

    def subnets(self) -> Mapping[str, Mapping[str, Any]]:
        """Every subnet the fleet names that exists, by ID (a filter, so a missing one is just absent)."""

        def load() -> dict[str, Mapping[str, Any]]:
            ids = set(self.fleet.cluster.subnet_ids)
            for group in self.fleet.node_groups:
                ids.update(group.subnet_ids or ())
            if not ids:
                return {}
            found = paginate(
                self.clients.ec2, "describe_subnets", "Subnets", Filters=[{"Name": "subnet-id", "Values": sorted(ids)}]
            )
            return {str(s["SubnetId"]): s for s in found}

        return self._once("subnets", load)

    def group_subnet_ids(self, group: NodeGroup) -> tuple[str, ...]:
        """The subnets a node group launches into: its own, else the cluster's."""
        return group.subnet_ids if group.subnet_ids is not None else self.fleet.cluster.subnet_ids

    def group_subnet_zones(self, group: NodeGroup) -> frozenset[str]:
        """Zone IDs of the group's subnets that exist."""
        subnets = self.subnets()
        return frozenset(str(subnets[s]["AvailabilityZoneId"]) for s in self.group_subnet_ids(group) if s in subnets)
