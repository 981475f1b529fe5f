"""How fast a new node pulls a group's images: the figures gpufleet assumes where the spec measures nothing.

One measurement, upstream: aws-samples/karpenter-blueprints blueprints/soci-snapshotter/README.md @ 48a2104980f2
(https://github.com/aws-samples/karpenter-blueprints/blob/48a2104980f238849bc10c204715ceee0556e47c/blueprints/soci-snapshotter/README.md,
"Results"): kubelet's Pulled events for one vLLM image, "Image size: 10778400361 bytes", on a root gp3 volume at
16,000 IOPS and 1,000 MiB/s, on instances with more than 8,000 Mbps of network and EBS bandwidth:
- containerd's default (sequential) pull: 1m52.33s;
- SOCI parallel pull/unpack on AL2023: 59.813s; on Bottlerocket: 44.974s.
The pull rates below are that size over those times. They describe that disk and that registry (ECR, in region);
a root volume at gp3's baseline is slower, so a team that measured its own rate sets workloads.imagePullGBps.
The blueprint's later revision (@ be1fe4f9f202, a 9.35 GB image: 2m10.813s, 39.553s, 23.229s) shows how much the
figure moves with the image; gpufleet keeps the one the issue that introduced this table quotes.
Decimal units (GB = 10^9 bytes).
"""

from __future__ import annotations

SOURCE = "aws-samples/karpenter-blueprints soci-snapshotter @ 48a2104"
MEASURED_IMAGE_GB = 10.778400361
CONTAINERD_SECONDS = 112.33

# An image set whose size the spec does not give (imageSets[].sizeGB) counts this much per image: the blueprint's
# image, a CUDA framework image of the size the NGC PyTorch and Triton images have.
ASSUMED_IMAGE_GB = MEASURED_IMAGE_GB
CONTAINERD_GBPS = MEASURED_IMAGE_GB / CONTAINERD_SECONDS


def seconds(size_gb: float, gbps: float) -> float:
    return size_gb / gbps
