"""Stage 6, storage: the fleet's FSx for Lustre file system (`fsxLustre`) and how pods reach it.

Why, with sources: docs/network-and-storage.md, "Design notes", gpufleet/plan/builders/fsx.py.
"""

from __future__ import annotations

from gpufleet.facts import checkpoints, fsx, pricing
from gpufleet.plan.builders.cluster import (
    pod_identity_resources,
    pod_identity_warning,
    security_group,
    security_group_rule,
    tags,
)
from gpufleet.plan.builders.common import AWS_PROVIDER, CLUSTER, helm, k8s
from gpufleet.plan.manifests import fsx as fm
from gpufleet.plan.parts import BuildContext, Ref, Resource, StageContent
from gpufleet.spec import fsx as placement
from gpufleet.spec.fleet import Fleet, FsxLustre

FILE_SYSTEM = "fsx-lustre"
SECURITY_GROUP = "fsx-security-group"
NODE_SECURITY_GROUP = Ref(CLUSTER, "vpcConfig.clusterSecurityGroupId")


def _ports(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def security_group_resources(fleet: Fleet) -> tuple[list[Resource], tuple[str, ...]]:
    """The file system's security group and the Lustre rules on it and on the nodes' group; the ids of the rules
    the file system needs before it is created (FSx checks that its group lets Lustre traffic in from itself)."""
    out = [
        security_group(
            fleet,
            SECURITY_GROUP,
            "fsx",
            "FSx for Lustre: Lustre traffic (TCP 988, 1018-1023) from the fleet's nodes and itself",
        )
    ]
    own: list[str] = []

    def rule(rid: str, kind: str, group: Ref, peer: Ref, low: int, high: int, description: str) -> None:
        out.append(
            security_group_rule(
                fleet,
                rid,
                kind,
                group,
                referencedSecurityGroupId=peer,
                ipProtocol="tcp",
                fromPort=low,
                toPort=high,
                description=description,
            )
        )

    fs_group = Ref(SECURITY_GROUP, "id")
    for low, high in fsx.LUSTRE_PORTS:
        ports = _ports(low, high)
        rule(f"fsx-ingress-{ports}-self", "Ingress", fs_group, fs_group, low, high, f"Lustre {ports} between servers")
        own.append(f"fsx-ingress-{ports}-self")
        rule(
            f"fsx-ingress-{ports}-nodes",
            "Ingress",
            fs_group,
            NODE_SECURITY_GROUP,
            low,
            high,
            f"Lustre {ports} from the fleet's nodes",
        )
        rule(
            f"nodes-ingress-lustre-{ports}",
            "Ingress",
            NODE_SECURITY_GROUP,
            fs_group,
            low,
            high,
            f"Lustre {ports} from the FSx for Lustre file system {fleet.name}-lustre",
        )
    # AWS gives every new security group an allow-all egress rule, and the provider removes it (terraform-provider-aws
    # aws_security_group, "Terraform will remove this default rule"): put it back, so the file servers reach each
    # other, their clients and the linked buckets as they do by default.
    out.append(
        security_group_rule(
            fleet,
            "fsx-egress",
            "Egress",
            fs_group,
            cidrIpv4="0.0.0.0/0",
            ipProtocol="-1",
            description="All traffic out (AWS's default for a new security group)",
        )
    )
    own.append("fsx-egress")
    return out, tuple(own)


def file_system(fleet: Fleet, spec: FsxLustre, after: tuple[str, ...]) -> Resource:
    subnet = placement.subnet(fleet, spec)
    assert subnet is not None  # rules: fsx-lustre
    args: dict[str, object] = {
        "deploymentType": spec.deployment_type,
        "storageCapacity": spec.storage_capacity_gib,
        "storageType": "SSD",
        # Data repository associations need Lustre 2.12 or later; the API's default is 2.10 except on PERSISTENT_2.
        "fileSystemTypeVersion": fsx.LUSTRE_VERSION,
        # pulumi-aws 7.x takes the one subnet as a string (fsx.LustreFileSystem subnet_ids).
        "subnetIds": subnet,
        "securityGroupIds": [Ref(SECURITY_GROUP, "id")],
        "tags": {**tags(fleet), "Name": f"{fleet.name}-lustre"},
    }
    if spec.per_unit_storage_throughput is not None:
        args["perUnitStorageThroughput"] = spec.per_unit_storage_throughput
    return Resource(
        id=FILE_SYSTEM,
        type="aws:fsx/lustreFileSystem:LustreFileSystem",
        provider=AWS_PROVIDER,
        # A persistent file system holds data meant to last: `pulumi destroy` stops at it, as at the checkpoint
        # bucket. A scratch one is disposable by design.
        protect=spec.deployment_type in fsx.PERSISTENT,
        depends_on=after,
        args=args,
    )


def repository_resources(fleet: Fleet, spec: FsxLustre, bucket_id: str | None) -> list[Resource]:
    out = []
    for i, repo in enumerate(spec.data_repositories):
        bucket = placement.repository_bucket(fleet, repo)
        assert bucket is not None  # rules: fsx-lustre
        s3: dict[str, object] = {}
        if repo.auto_import:
            s3["autoImportPolicy"] = {"events": list(repo.auto_import)}
        if repo.auto_export:
            s3["autoExportPolicy"] = {"events": list(repo.auto_export)}
        linked_checkpoints = fleet.checkpoints is not None and bucket == fleet.checkpoints.bucket
        args: dict[str, object] = {
            "fileSystemId": Ref(FILE_SYSTEM, "id"),
            "fileSystemPath": repo.file_system_path,
            "dataRepositoryPath": f"s3://{bucket}/{repo.prefix}",
            # The bucket's existing objects are listed as files once the association exists, not only new ones.
            "batchImportMetaDataOnCreate": True,
            "tags": tags(fleet),
        }
        if s3:
            args["s3"] = s3
        out.append(
            Resource(
                id=f"fsx-data-repository-{i}",
                type="aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
                provider=AWS_PROVIDER,
                depends_on=(bucket_id,) if linked_checkpoints and bucket_id else (),
                args=args,
            )
        )
    return out


def driver_resources(fleet: Fleet) -> list[Resource]:
    identity = pod_identity_resources(
        fleet,
        role="fsx-csi-controller-role",
        policy="fsx-csi-controller-policy",
        association="fsx-csi-controller-pod-identity",
        name_prefix=f"{fleet.name}-fsx-csi-",
        description=f"FSx CSI driver controller of cluster {fleet.cluster.name} (EKS Pod Identity)",
        policy_name="fsx-csi-controller",
        policy_document=fm.controller_policy(Ref(FILE_SYSTEM, "arn")),
        namespace=fm.NAMESPACE,
        service_account=fm.CONTROLLER_SERVICE_ACCOUNT,
    )
    release = helm(
        "fsxCsiDriver",
        fleet.versions.fsx_csi_driver,
        fleet=fleet,
        release=fm.RELEASE,
        namespace=fm.NAMESPACE,
        values=fm.values(fleet),
        depends_on=("fsx-csi-controller-pod-identity",),
    )
    return [*identity, release]


def claim_resources(fleet: Fleet, spec: FsxLustre) -> list[Resource]:
    out = []
    for team in fleet.teams:
        pv = k8s(fm.persistent_volume(team, spec.storage_capacity_gib, FILE_SYSTEM), depends_on=(f"helm-{fm.RELEASE}",))
        out += [pv, k8s(fm.persistent_volume_claim(team, spec.storage_capacity_gib), depends_on=(pv.id,))]
    return out


def monthly_usd(spec: FsxLustre) -> tuple[float, float]:
    """(USD per GB-month, USD per month) of the file system's storage capacity, throughput included."""
    price = pricing.FSX_LUSTRE_USD_PER_GB_MONTH[(spec.deployment_type, spec.per_unit_storage_throughput)]
    return price, spec.storage_capacity_gib * price


def _usd(value: float) -> str:
    return f"USD {value:,.0f}"


def notes(fleet: Fleet, spec: FsxLustre) -> list[str]:
    group = placement.node_group(fleet, spec)
    assert group is not None  # rules: fsx-lustre
    kind, gib, per_unit = spec.deployment_type, spec.storage_capacity_gib, spec.per_unit_storage_throughput
    size = fsx.tib(gib)
    write, read = fsx.write_mbps_per_tib(kind, per_unit), fsx.read_mbps_per_tib(kind, per_unit)
    price, month = monthly_usd(spec)
    where = f"node group `{group.name}`" + (f" (zone {group.zone})" if group.zone else "")
    source = "fsxLustre.perUnitStorageThroughput" if per_unit is not None else f"{kind}'s fixed baseline"
    if read == write:
        throughput = f"{write:g} MB/s/TiB x {size:.2f} TiB = **{write * size:,.0f} MB/s**"
    else:
        throughput = (
            f"read {read:g} MB/s/TiB x {size:.2f} TiB = **{read * size:,.0f} MB/s**, write {write:g} MB/s/TiB x"
            f" {size:.2f} TiB = **{write * size:,.0f} MB/s**"
        )
    lines = [
        "",
        (
            f"FSx for Lustre `{fleet.name}-lustre`: {kind}, Lustre {fsx.LUSTRE_VERSION}, SSD, in subnet"
            f" `{placement.subnet(fleet, spec)}` beside {where}; Lustre ports TCP 988 and 1018-1023 open between it and"
            " the nodes' security group (the cluster security group)."
            + (" Pulumi `protect`: `pulumi destroy` stops at it." if kind in fsx.PERSISTENT else "")
        ),
        "",
        "| | figure | from |",
        "|---|---|---|",
        f"| storage capacity | {gib:,} GiB = {size:.2f} TiB | fsxLustre.storageCapacityGiB |",
        f"| baseline disk throughput | {throughput} | {source} (FSx for Lustre user guide, SSD performance) |",
        (
            f"| monthly cost | {gib:,} GB-month x USD {price:.3f} = **{_usd(month)}** | Amazon FSx for Lustre"
            f" pricing, US East (N. Virginia), as of {pricing.PRICES_AS_OF}"
            f"{'' if fleet.cluster.region == 'us-east-1' else f'; {fleet.cluster.region} estimated at that rate'} |"
        ),
    ]
    cp = fleet.checkpoints
    if cp is not None:
        total = checkpoints.checkpoint_bytes(cp.model_parameters, cp.bytes_per_parameter)
        lines.append(
            f"| one checkpoint written to it | {checkpoints.human_bytes(total)} / {write * size:,.0f} MB/s ="
            f" {checkpoints.duration(total / (write * size * 1e6))} | checkpoints.modelParameters x bytesPerParameter |"
        )
    lines.append("")
    if spec.data_repositories:
        lines += [
            "| directory | linked to | imports (S3 events) | exports (file events) |",
            "|---|---|---|---|",
        ]
        for repo in spec.data_repositories:
            bucket = placement.repository_bucket(fleet, repo)
            lines.append(
                f"| `{repo.file_system_path}` | `s3://{bucket}/{repo.prefix}` |"
                f" {', '.join(repo.auto_import) or 'off'} | {', '.join(repo.auto_export) or 'off'} |"
            )
        lines.append("")
    if fleet.teams:
        lines.append(
            f"Each team namespace has PersistentVolumeClaim `{fm.CLAIM}` (ReadWriteMany, bound to PersistentVolume"
            f" `{fm.CLAIM}-<team>`, driver `{fm.DRIVER}`, mount option `flock`): the whole file system; mount it with"
            " `subPath: <team>` to work in the team's directory. The FSx CSI driver's node plugin tolerates every"
            " taint, so it runs on every node group."
        )
    else:
        lines.append("No teams: no PersistentVolumeClaims.")
    return lines


def build(ctx: BuildContext, bucket_id: str | None) -> StageContent:
    """The file system and its claims; `bucket_id` is the checkpoint bucket's resource, which an association
    linking it waits for."""
    fleet = ctx.fleet
    spec = fleet.fsx_lustre
    if spec is None:
        return StageContent()
    groups, after = security_group_resources(fleet)
    resources = [
        *groups,
        file_system(fleet, spec, after),
        *repository_resources(fleet, spec, bucket_id),
        *driver_resources(fleet),
        *claim_resources(fleet, spec),
    ]
    warnings = []
    warning = pod_identity_warning(fleet, "the FSx CSI driver's controller gets no AWS credentials")
    if warning:
        warnings.append(warning)
    return StageContent(resources=tuple(resources), warnings=tuple(warnings), notes=tuple(notes(fleet, spec)))
