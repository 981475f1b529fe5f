"""The cluster in a box: a real control plane and the fleet's real controllers on this machine, nodes by KWOK.

Every binary is built from its Go module at the version pinned in e2e/controlplane/go.mod and
e2e/controllers/go.mod (gpufleet.e2e.box.build); nothing prebuilt is downloaded. docs/cluster-in-a-box.md says how
it is put together and what it does not simulate.
"""
