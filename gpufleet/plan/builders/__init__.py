"""What the stages build from: the seams (provisioners, device managers, cluster roles, each a registry) and the
resources more than one stage or seam shares (the cluster, its access entries, node groups, FSx, Mountpoint, the
serving start-up figures). Nothing here imports gpufleet.plan.stages."""
