"""Rules on the cluster's own settings: its system nodes, its public endpoint and an existing Prometheus."""

from __future__ import annotations

from collections.abc import Iterator

from gpufleet.base.errors import Issue
from gpufleet.facts import ami_releases
from gpufleet.facts.ami_releases import SYSTEM_NODES_AMI_TYPE
from gpufleet.rules.registry import rule
from gpufleet.spec import access
from gpufleet.spec.fleet import Fleet


@rule("telemetry")
def _telemetry(fleet: Fleet) -> Iterator[Issue]:
    if fleet.telemetry.prometheus == "Install" and fleet.telemetry.existing_namespace is not None:
        yield Issue(
            path=("telemetry", "existingNamespace"),
            at_key=True,
            message="existingNamespace is only used with prometheus: Existing",
            hint="remove existingNamespace, or set prometheus: Existing",
        )


@rule("system-nodes")
def _system_nodes(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.mode == "Create" and cluster.system_nodes is None:
        yield Issue(
            path=("cluster",),
            message=(
                "mode Create needs systemNodes: every GPU group is tainted, so CoreDNS and the controllers need CPU"
                " nodes to run on"
            ),
            hint='add cluster.systemNodes: {releaseVersion: "<the AMI release of your GPU groups>"}',
        )
    if cluster.mode == "Existing" and cluster.system_nodes is not None:
        yield Issue(
            path=("cluster", "systemNodes"),
            at_key=True,
            message="systemNodes is only used with mode Create: an existing cluster brings its own system nodes",
        )
    if cluster.system_nodes is not None:
        found = ami_releases.check(
            SYSTEM_NODES_AMI_TYPE, cluster.system_nodes.release_version, cluster.kubernetes_version
        )
        if found is not None:
            yield Issue(
                path=("cluster", "systemNodes", "releaseVersion"),
                severity=found.severity,
                message=found.message,
                hint=found.hint,
            )
    if cluster.system_nodes is not None and cluster.system_nodes.min_size > cluster.system_nodes.max_size:
        yield Issue(
            path=("cluster", "systemNodes", "minSize"),
            message=f"minSize {cluster.system_nodes.min_size} is larger than maxSize {cluster.system_nodes.max_size}",
        )


@rule("endpoint")
def _endpoint(fleet: Fleet) -> Iterator[Issue]:
    cluster = fleet.cluster
    if cluster.public_cidrs is None and cluster.open_endpoint_reason is None:
        return
    where = ("cluster", "publicEndpoint")
    if cluster.mode == "Existing":
        yield Issue(
            path=where,
            at_key=True,
            message=(
                "publicEndpoint is only used with mode Create: gpufleet does not change an existing cluster's endpoint"
            ),
        )
    elif cluster.endpoint_access == "Private":
        yield Issue(
            path=where,
            at_key=True,
            message="publicEndpoint is set but endpointAccess is Private: there is no public endpoint",
            hint="remove publicEndpoint, or set endpointAccess: PublicAndPrivate",
        )
    elif cluster.open_endpoint_reason is not None and not access.endpoint_open(cluster):
        yield Issue(
            path=where + ("acknowledgeOpenToInternet",),
            at_key=True,
            message=(
                "acknowledgeOpenToInternet is set but the endpoint is not open: only"
                f" {', '.join(access.public_cidrs(cluster))} may reach it"
            ),
            hint="remove acknowledgeOpenToInternet (it would record a reason for an exposure that does not exist)",
        )
