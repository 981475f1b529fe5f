"""Stage 1 (placeholder while the real builder is written)."""
from gpufleet.builders.common import AWS_PROVIDER, K8S_PROVIDER, CLUSTER, k8s, namespace, helm
from gpufleet.plan import BuildContext, Concat, Ref, Resource, StageContent, builder
from gpufleet.spec import Fleet


@builder("foundation")
def build(ctx: BuildContext) -> StageContent:
    fleet = ctx.fleet
    res = [
        Resource(id=AWS_PROVIDER, type="pulumi:providers:aws", args={"region": fleet.cluster.region}),
        Resource(id=CLUSTER, type="aws:eks/cluster:Cluster", args={"name": fleet.cluster.name, "role_arn": "x", "vpc_config": {"subnet_ids": list(fleet.cluster.subnet_ids)}}, provider=AWS_PROVIDER),
        Resource(id=K8S_PROVIDER, type="pulumi:providers:kubernetes", args={"kubeconfig": Concat("server: ", Ref(CLUSTER, "endpoint"), " ca: ", Ref(CLUSTER, "certificateAuthority.data"))}),
        k8s(namespace("gpu-operator")),
        k8s({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "x"}, "value": 5}),
        k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "gpu-operator", "labels": {"a_b": "1"}}, "data": {"config_yaml": "a\nb\n", "x.y": "z"}}),
        helm("gpuOperator", fleet.versions.gpu_operator, release="gpu-operator", namespace="gpu-operator", values={"driver": {"enabled": False}, "some_key": 1}),
    ]
    return StageContent(resources=tuple(res))
