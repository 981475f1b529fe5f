"""How long an admitted workload may reasonably take to get every pod ready: the default of Kueue's
`waitForPodsReady.timeout` (admission.podsReadyTimeoutSeconds), derived from the slowest GPU group.

A workload that is not ready within the timeout is evicted and requeued, and after `backoffLimitCount` tries
deactivated (Kueue `apis/config/v1beta2/configuration_types.go`, WaitForPodsReady / RequeuingStrategy). A job
admitted onto a group that must scale up first waits for the whole cold start, so the timeout must cover it.
Kueue's own default (5 minutes) and the example's old 600 s do not cover a p5 group starting from zero.

Figures per GPU node (estimates, each with where it comes from):
- NODE_READY_SECONDS 180: EC2 launch and boot (1-2 minutes for GPU instances, docs/stage-1.md "Image size, warm pools
  and time-to-first-step") plus the nodeadm join until the node is Ready.
- OPERANDS_SECONDS 180: the GPU Operator's operands on a new node before `nvidia.com/gpu` is allocatable: toolkit
  validation, device plugin, and the validator's CUDA workload (gpufleet.plan.manifests.gpu_operator,
  WITH_WORKLOAD=true).
- IMAGE_PULL_SECONDS 300 per image: a 10-20 GB framework image (nvcr.io PyTorch / Triton, docs/stage-1.md) at the
  50-100 MB/s a single containerd pull and unpack typically reaches; gpufleet pre-pulls a group's image sets in
  user data, so this time is spent before the node is Ready, but it is spent on every new node.
- WARM_RESUME_SECONDS 60: a Stopped warm-pool instance that already holds the images resumes in about a minute
  (docs/stage-1.md); with instance-store RAID0 the images are lost at every stop, so it pulls again.
- MARGIN 1.5: requeueing a gang job costs far more than waiting a few more minutes.
The default is the largest estimate over the GPU groups, rounded up to a whole minute.
"""

from __future__ import annotations

import math

from gpufleet.spec.fleet import Fleet, NodeGroup

NODE_READY_SECONDS = 180
OPERANDS_SECONDS = 180
IMAGE_PULL_SECONDS = 300
WARM_RESUME_SECONDS = 60
MARGIN = 1.5


def images_of(fleet: Fleet, group: NodeGroup) -> int:
    sets = {s.name: s.images for s in fleet.image_sets}
    return len({image for name in group.images for image in sets.get(name, ())})


def group_seconds(fleet: Fleet, group: NodeGroup) -> int:
    """Estimated seconds from a scale-up to every pod of a job ready on a new node of this group."""
    pull = images_of(fleet, group) * IMAGE_PULL_SECONDS
    warm_with_images = group.warm_pool is not None and group.warm_pool.min_size > 0 and group.local_storage != "RAID0"
    node = WARM_RESUME_SECONDS if warm_with_images else NODE_READY_SECONDS + pull
    return node + OPERANDS_SECONDS


def default_timeout_seconds(fleet: Fleet) -> tuple[int, str]:
    """The derived default and the group it comes from."""
    slowest = max(fleet.node_groups, key=lambda g: group_seconds(fleet, g))
    return 60 * math.ceil(group_seconds(fleet, slowest) * MARGIN / 60), slowest.name


def pods_ready_timeout_seconds(fleet: Fleet) -> int:
    """The spec's admission.podsReadyTimeoutSeconds, else the derived default."""
    given = fleet.admission.pods_ready_timeout_seconds
    return given if given is not None else default_timeout_seconds(fleet)[0]
