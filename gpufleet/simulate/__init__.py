"""A pure behavioural model of the gates a workload passes on a real cluster (docs/architecture.md section 7).

`nodes` (what a node of each group offers, from the plan), `workload` (manifests as pod sets), one module per gate
(`kueue_admission`, `scheduling`, `kubelet` over `topology_manager`, `device_plugin`, `autoscaler`), `explain` (the
gates in order) and `canonical` (the workloads synth runs through it). Imports spec, catalog, plan and the manifest
builders' names; never the CLI or Pulumi.
"""
