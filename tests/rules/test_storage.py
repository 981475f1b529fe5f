"""The rules of gpufleet/rules/storage.py (storage) on small fleets: a passing and a failing case of each, with the
exact message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.fleets import (
    CHECKPOINTS,
    CKPT,
    CUSTOMER_KEY,
    DATASET,
    FSX,
    JOB,
    ONE_SUBNET,
    PREFETCH,
    SERVING,
    Patch,
    add_group,
    at,
    build,
    found,
    group,
    team,
)

# Each entry: rule name, patches, the (path, message) pairs the rule reports. An empty list is a passing case.
CASES: list[Any] = [
    # checkpoint-jobs
    pytest.param(
        "checkpoint-jobs",
        [at("checkpoints", value={**CKPT, "jobs": [{**JOB}]})],
        [],
        id="checkpoint-jobs/ok",
    ),
    pytest.param(
        "checkpoint-jobs",
        [at("checkpoints", value={**CKPT, "jobs": [{**JOB, "team": "visoin", "nodeGroup": "l5", "nodes": 9}]})],
        [
            ("checkpoints.jobs[0].team", 'unknown team "visoin"'),
            ("checkpoints.jobs[0].nodeGroup", 'unknown node group "l5"'),
        ],
        id="checkpoint-jobs/unknown",
    ),
    pytest.param(
        "checkpoint-jobs",
        [at("checkpoints", value={**CKPT, "jobs": [{**JOB, "nodes": 5}]})],
        [
            (
                "checkpoints.jobs[0].nodes",
                'job "pretrain" runs on 5 nodes, but node group "l4" has at most 4 (scaling.maxSize)',
            )
        ],
        id="checkpoint-jobs/more-nodes-than-the-group",
    ),
    # fsx-lustre
    pytest.param(
        "fsx-lustre",
        [ONE_SUBNET, at("fsxLustre", value={**FSX, "dataRepositories": [DATASET]})],
        [],
        id="fsx-lustre/persistent-2-with-a-repository",
    ),
    pytest.param(
        "fsx-lustre",
        [
            ONE_SUBNET,
            at("checkpoints", value=CKPT),
            at(
                "fsxLustre",
                value={"deploymentType": "SCRATCH_2", "nodeGroup": "l4", "dataRepositories": [{"fileSystemPath": "/"}]},
            ),
        ],
        [],
        id="fsx-lustre/scratch-2-linked-to-the-checkpoint-bucket",
    ),
    pytest.param(
        "fsx-lustre",
        [group(subnetIds=["subnet-0aa", "subnet-0bb"]), at("fsxLustre", value={**FSX, "subnetId": "subnet-0bb"})],
        [],
        id="fsx-lustre/one-of-the-groups-subnets",
    ),
    pytest.param(
        "fsx-lustre",
        [ONE_SUBNET, at("fsxLustre", value={"nodeGroup": "l4", "storageCapacityGiB": 3600})],
        [
            ("fsxLustre", "deploymentType PERSISTENT_2 needs perUnitStorageThroughput (MB/s per TiB of storage)"),
            ("fsxLustre.storageCapacityGiB", "PERSISTENT_2 takes 1200, 2400 or a multiple of 2400 GiB, not 3600"),
        ],
        id="fsx-lustre/no-throughput-and-capacity-between-steps",
    ),
    pytest.param(
        "fsx-lustre",
        [ONE_SUBNET, at("fsxLustre", value={**FSX, "deploymentType": "PERSISTENT_1"})],
        [("fsxLustre.perUnitStorageThroughput", "PERSISTENT_1 offers 50, 100, 200 MB/s/TiB, not 250")],
        id="fsx-lustre/tier-of-another-type",
    ),
    pytest.param(
        "fsx-lustre",
        [
            ONE_SUBNET,
            at(
                "fsxLustre",
                value={**FSX, "deploymentType": "SCRATCH_1", "storageCapacityGiB": 4800, "dataRepositories": [DATASET]},
            ),
        ],
        [
            (
                "fsxLustre.perUnitStorageThroughput",
                "SCRATCH_1 has a fixed throughput (200 MB/s/TiB read, 200 write): perUnitStorageThroughput is for"
                " PERSISTENT_1 and PERSISTENT_2",
            ),
            ("fsxLustre.storageCapacityGiB", "SCRATCH_1 takes 1200, 2400 or a multiple of 3600 GiB, not 4800"),
            (
                "fsxLustre.dataRepositories",
                "SCRATCH_1 file systems take no data repository associations (FSx supports them on SCRATCH_2,"
                " PERSISTENT_1 and PERSISTENT_2)",
            ),
        ],
        id="fsx-lustre/scratch-1",
    ),
    pytest.param(
        "fsx-lustre",
        [at("fsxLustre", value={**FSX, "nodeGroup": "l5"})],
        [("fsxLustre.nodeGroup", 'unknown node group "l5"')],
        id="fsx-lustre/unknown-group",
    ),
    pytest.param(
        "fsx-lustre",
        [at("fsxLustre", value={"perUnitStorageThroughput": 125})],
        [("fsxLustre", "fsxLustre needs nodeGroup: the fleet has no Training group to put the file system beside")],
        id="fsx-lustre/no-training-group",
    ),
    pytest.param(
        "fsx-lustre",
        [group(workloadClass="Training"), at("fsxLustre", value={"perUnitStorageThroughput": 125})],
        [
            (
                "fsxLustre",
                'node group "l4" spans 2 subnets (subnet-0aa, subnet-0bb): an FSx for Lustre file system takes one',
            )
        ],
        id="fsx-lustre/training-group-on-the-clusters-subnets",
    ),
    pytest.param(
        "fsx-lustre",
        [ONE_SUBNET, at("fsxLustre", value={**FSX, "subnetId": "subnet-0bb"})],
        [
            (
                "fsxLustre.subnetId",
                'subnet-0bb is not a subnet of node group "l4" (subnet-0aa): its nodes would reach the file system'
                " across zones",
            )
        ],
        id="fsx-lustre/subnet-of-another-zone",
    ),
    pytest.param(
        "fsx-lustre",
        [
            ONE_SUBNET,
            CUSTOMER_KEY,
            at(
                "fsxLustre",
                value={
                    **FSX,
                    "dataRepositories": [
                        {"fileSystemPath": "/"},
                        DATASET,
                        {**DATASET, "fileSystemPath": "/more/"},
                        {"fileSystemPath": "/eval", "prefix": "eval/"},
                    ],
                },
            ),
        ],
        [
            (
                "fsxLustre.dataRepositories[0]",
                "the checkpoint bucket \"labs-ckpt\" is encrypted with the fleet's key, which only the teams'"
                " checkpoint roles may use: FSx's service-linked role could neither import nor export its objects",
            ),
            (
                "fsxLustre.dataRepositories[1].fileSystemPath",
                "/datasets overlaps the directory / another association links",
            ),
            (
                "fsxLustre.dataRepositories[2].fileSystemPath",
                "/more/ overlaps the directory / another association links",
            ),
            ("fsxLustre.dataRepositories[2]", "s3://labs-datasets/train/ is linked by another association already"),
            (
                "fsxLustre.dataRepositories[3]",
                "the checkpoint bucket \"labs-ckpt\" is encrypted with the fleet's key, which only the teams'"
                " checkpoint roles may use: FSx's service-linked role could neither import nor export its objects",
            ),
            (
                "fsxLustre.dataRepositories[3].fileSystemPath",
                "/eval overlaps the directory / another association links",
            ),
        ],
        id="fsx-lustre/repositories-that-fsx-refuses",
    ),
    pytest.param(
        "fsx-lustre",
        [ONE_SUBNET, at("fsxLustre", value={**FSX, "dataRepositories": [{"fileSystemPath": "/"}]})],
        [
            (
                "fsxLustre.dataRepositories[0]",
                "the association needs a bucket: the fleet has no checkpoints.bucket to link by default",
            )
        ],
        id="fsx-lustre/no-bucket-to-link",
    ),
    # prefetch
    pytest.param("prefetch", [*SERVING, team(prefetch=[PREFETCH])], [], id="prefetch/inference-raid0"),
    pytest.param(
        "prefetch",
        [at("checkpoints", value=CHECKPOINTS), *SERVING[1:], team(prefetch=[PREFETCH])],
        [
            (
                "teams[0].prefetch",
                "prefetch reads the team's claims s3-<group>, which only checkpoints.mountpoint creates",
            )
        ],
        id="prefetch/without-mountpoint",
    ),
    pytest.param(
        "prefetch",
        [*SERVING, team(prefetch=[PREFETCH | {"nodeGroup": "serv"}])],
        [("teams[0].prefetch[0].nodeGroup", 'unknown node group "serv"')],
        id="prefetch/unknown-group",
    ),
    pytest.param(
        "prefetch",
        [SERVING[0], SERVING[1], team(prefetch=[PREFETCH])],
        [
            (
                "teams[0].prefetch[0].nodeGroup",
                'team "vision" has no quota on node group "serve", so it has no claim s3-serve there to prefetch from',
            )
        ],
        id="prefetch/no-quota",
    ),
    pytest.param(
        "prefetch",
        [*SERVING, team(prefetch=[PREFETCH | {"nodeGroup": "l4"}])],
        [
            (
                "teams[0].prefetch[0].nodeGroup",
                'node group "l4" is a Batch group: prefetch keeps serving weights in the caches of Inference groups,'
                " whose claims are read-only",
            )
        ],
        id="prefetch/not-inference",
    ),
    pytest.param(
        "prefetch",
        [SERVING[0], add_group(name="serve", instanceType="g6e.12xlarge", workloadClass="Inference"), SERVING[2]]
        + [team(prefetch=[PREFETCH])],
        [
            (
                "teams[0].prefetch[0].nodeGroup",
                'node group "serve" has no Mountpoint cache to prefetch into: the cache is on the instance-store'
                " array, which only localStorage RAID0 builds",
            )
        ],
        id="prefetch/no-raid0",
    ),
    pytest.param(
        "prefetch",
        [*SERVING, team(prefetch=[PREFETCH, PREFETCH | {"paths": ["other/"]}])],
        [("teams[0].prefetch[1].nodeGroup", 'node group "serve" is listed twice in the team\'s prefetch')],
        id="prefetch/group-twice",
    ),
    pytest.param(
        "prefetch",
        [
            *SERVING,
            team(prefetch=[PREFETCH]),
            at("workloads", value={"weightLoadGBps": {"serve": {"s3": 6, "nvme": 3.5}}}),
        ],
        [
            (
                "teams[0].prefetch[0].nodeGroup",
                "on node group serve a warm cache reads at 3.5 GB/s and S3 at 6 GB/s (workloads.weightLoadGBps,"
                " measured): Mountpoint serves cached data from the array, so prefetched weights load slower than from"
                " S3",
            )
        ],
        id="prefetch/measured-slower-cache",
    ),
    pytest.param(
        "prefetch",
        [*SERVING, team(prefetch=[{"nodeGroup": "serve", "paths": ["/models/a/", "models/../b", "models//c", "./d"]}])],
        [
            (
                "teams[0].prefetch[0].paths[0]",
                'prefetch path "/models/a/" is absolute: paths are relative to the team\'s prefix',
            ),
            *[
                (
                    f"teams[0].prefetch[0].paths[{k}]",
                    f'prefetch path "{p}" has an empty, "." or ".." segment: Mountpoint shows no such key as a file,'
                    " and a path may not leave the team's prefix",
                )
                for k, p in ((1, "models/../b"), (2, "models//c"), (3, "./d"))
            ],
        ],
        id="prefetch/paths",
    ),
]


@pytest.mark.parametrize(("rule", "patches", "expected"), CASES)
def test_rule(rule: str, patches: list[Patch], expected: list[tuple[str, str]]) -> None:
    assert found(rule, build(*patches)) == expected
