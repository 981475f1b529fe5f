"""Replace / roll / update classification on small inventories (no synth), and the renderers."""

from __future__ import annotations

import copy
from typing import Any

from gpufleet.review import summary
from gpufleet.review.impact import changed_paths, compare, flatten, fleet_cost
from tests.policies.objects import (
    CLOSE_ESCAPE,
    b64,
    bucket_set,
    k8s,
    launch_template,
    mime,
    node_group,
    res,
    system_group,
)


def inv(*resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: dict(r, stage="foundation") for r in copy.deepcopy(list(resources))}


def base() -> dict[str, dict[str, Any]]:
    role = res("node-role", "aws:iam/role:Role", {"namePrefix": "research-node-"})
    ng = node_group()
    ng["inputs"]["nodeRoleArn"] = "<ref:node-role.arn>"
    return inv(role, ng, launch_template("h100"), system_group())


def nodes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(n.id, n.action, n.reasons) for n in compare(old, new).nodes]


def test_user_data_change_rolls_the_group_through_a_new_template_version() -> None:
    old, new = base(), base()
    new["h100-launch-template"]["inputs"]["userData"] = b64(mime("kind: NodeConfig\nspec: {}\n", CLOSE_ESCAPE))
    report = compare(old, new)
    assert {c.id: c.action for c in report.changes} == {"h100-launch-template": "update", "h100-node-group": "update"}
    assert nodes(old, new) == [
        (
            "h100-node-group",
            "roll",
            ("launchTemplate.version: new version of launch template h100-launch-template (userData)",),
        )
    ]


def test_template_tags_make_no_new_version() -> None:
    old, new = base(), base()
    new["h100-launch-template"]["inputs"]["tags"] = {"team": "ml"}
    assert [c.id for c in compare(old, new).changes] == ["h100-launch-template"]
    assert nodes(old, new) == []


def test_template_replacement_replaces_the_group() -> None:
    old, new = base(), base()
    new["h100-launch-template"]["inputs"]["namePrefix"] = "other-h100-"
    assert nodes(old, new) == [
        ("h100-node-group", "replace", ("launchTemplate.id: new h100-launch-template.id at deploy",))
    ]


def test_node_role_replacement_replaces_every_group_using_it() -> None:
    old, new = base(), base()
    new["node-role"]["inputs"]["namePrefix"] = "fleet-node-"
    assert nodes(old, new) == [("h100-node-group", "replace", ("nodeRoleArn: new node-role.arn at deploy",))]


def test_in_place_node_group_changes_replace_nothing() -> None:
    old, new = base(), base()
    ng = new["h100-node-group"]["inputs"]
    ng["taints"].append({"key": "dedicated", "value": "ml", "effect": "NO_SCHEDULE"})
    ng["scalingConfig"]["maxSize"] = 8
    ng["labels"]["example.com/tier"] = "gold"
    ng["updateConfig"] = {"maxUnavailable": 2}
    change = next(c for c in compare(old, new).changes if c.id == "h100-node-group")
    assert change.action == "update" and change.reasons == ()
    # An added taint (spelled the EKS way) is one path named the Kubernetes way; an added subtree is one path.
    assert change.paths == (
        'labels["example.com/tier"]',
        "scalingConfig.maxSize",
        "taints[dedicated=ml:NoSchedule]",
        "updateConfig",
    )
    assert nodes(old, new) == []


def test_each_force_new_field_replaces() -> None:
    for path, value in (
        ("instanceTypes", ["p5en.48xlarge"]),
        ("subnetIds", ["subnet-9"]),
        ("capacityType", "SPOT"),
        ("amiType", "BOTTLEROCKET_x86_64_NVIDIA"),
    ):
        old, new = base(), base()
        new["h100-node-group"]["inputs"][path] = value
        assert [a for _, a, _ in nodes(old, new)] == ["replace"], path


def test_removed_group_and_system_group_are_flagged_with_their_kind() -> None:
    old, new = base(), base()
    del new["h100-node-group"]
    new["system-node-group"]["inputs"]["releaseVersion"] = "1.33.12-20260610"
    report = compare(old, new)
    assert [(n.id, n.action, n.gpu) for n in report.nodes] == [
        ("h100-node-group", "remove", True),
        ("system-node-group", "roll", False),
    ]
    text = summary.text(report, "a", "b")
    assert "!! GPU node group h100 (h100-node-group) REMOVED" in text
    assert "!! node group system (system-node-group) ROLLED" in text


def test_protected_bucket_rename_is_a_loud_replacement() -> None:
    old, new = inv(*bucket_set()), inv(*bucket_set())
    new["checkpoint-bucket"]["inputs"]["bucket"] = "renamed"
    report = compare(old, new)
    replaced = [c for c in report.changes if c.action == "replace"]
    assert [(c.id, c.protected) for c in replaced] == [
        ("checkpoint-bucket", True),
        ("checkpoint-bucket-encryption", False),
        ("checkpoint-bucket-public-access", False),
    ]
    assert "!! protected resource checkpoint-bucket would be replaced" in summary.text(report, "a", "b")
    # the encryption and access block follow the bucket: their `bucket` (ForceNew in terraform-provider-aws
    # s3/bucket_server_side_encryption_configuration.go, s3/bucket_public_access_block.go) holds the replaced
    # bucket's ref, new at deploy
    assert [c.reasons for c in replaced[1:]] == [("bucket: new checkpoint-bucket.id at deploy",)] * 2


def test_kubernetes_immutable_fields_and_parents() -> None:
    ds = k8s(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "p", "namespace": "s"},
            "spec": {
                "selector": {"matchLabels": {"a": "1"}},
                "template": {"spec": {"containers": [{"name": "pause", "image": "pause:3.9"}]}},
            },
        }
    )
    old = inv(ds)
    selector, image, parent = inv(ds), inv(ds), inv(ds)
    selector[ds["id"]]["inputs"]["spec"]["selector"]["matchLabels"]["a"] = "2"
    image[ds["id"]]["inputs"]["spec"]["template"]["spec"]["containers"][0]["image"] = "pause:3.10"
    parent[ds["id"]]["parent"] = "02-telemetry"
    assert [(c.action, c.paths) for c in compare(old, image).changes] == [
        ("update", ("spec.template.spec.containers[pause].image",))
    ]
    assert compare(old, selector).changes[0].action == "replace"
    assert compare(old, parent).changes[0].reasons[0].startswith("parent changed")


def test_option_changes_are_listed() -> None:
    old, new = inv(*bucket_set()), inv(*bucket_set())
    new["checkpoint-bucket"]["retainOnDelete"] = False
    assert [(c.id, c.action, c.paths) for c in compare(old, new).changes] == [
        ("checkpoint-bucket", "update", ("(retainOnDelete)",))
    ]


def test_flatten_names_list_items_and_quotes_dotted_keys() -> None:
    assert flatten({"a": [{"name": "x", "v": 1}, {"name": "y", "v": 2}], "l": {"k.io/x": 1}, "t": [1, 2], "e": []}) == {
        "a[x].name": "x",
        "a[x].v": 1,
        "a[y].name": "y",
        "a[y].v": 2,
        'l["k.io/x"]': 1,
        "t[0]": 1,
        "t[1]": 2,
        "e": [],
    }


def test_capacity_block_group_cost_takes_the_type_from_its_template() -> None:
    ng = node_group("h200")
    del ng["inputs"]["instanceTypes"]
    ng["inputs"]["scalingConfig"] = {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    lt = launch_template("h200", instanceType="p5en.48xlarge")
    [cost] = fleet_cost([ng, lt])
    assert (cost.instance_type, cost.gpus_per_node, cost.min_size) == ("p5en.48xlarge", 8, 2)
    assert cost.gpu_hour_usd is not None and cost.price_source.startswith("on-demand list price")


def test_markdown_without_changes() -> None:
    report = compare(base(), base())
    body = summary.markdown(report, "a", "b")
    assert "No changes to registered resources." in body and "[!CAUTION]" not in body


def test_provider_region_change_is_a_replacement() -> None:
    provider = res("aws-provider", "pulumi:providers:aws", {"region": "us-east-1"})
    old, new = inv(provider), inv(provider)
    new["aws-provider"]["inputs"]["region"] = "us-west-2"
    [change] = compare(old, new).changes
    assert (change.action, change.reasons) == ("replace", ("region: us-east-1 -> us-west-2",))


def _configmap(data: dict[str, str]) -> dict[str, Any]:
    return k8s(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "gpu-operator"},
            "data": data,
        }
    )


def test_configmap_data_change_replaces_unless_the_provider_makes_configmaps_mutable() -> None:
    # pulumi-kubernetes 4.34 provider/pkg/provider/diff.go: .data and .binaryData are force-new for a ConfigMap
    # unless enableConfigMapMutable (recorded by the inventory as the string "true").
    old, new = inv(_configmap({"a": "1"})), inv(_configmap({"a": "2"}))
    [change] = compare(old, new).changes
    assert (change.action, change.reasons) == ("replace", ("data.a: 1 -> 2",))
    provider = res("k8s-provider", "pulumi:providers:kubernetes", {"kubeconfig": "x", "enableConfigMapMutable": "true"})
    old, new = inv(_configmap({"a": "1"}), provider), inv(_configmap({"a": "2"}), provider)
    [change] = compare(old, new).changes
    assert (change.action, change.paths) == ("update", ("data.a",))


def test_added_subtree_is_one_path_and_indices_sort_numerically() -> None:
    old = {"spec": {"items": list(range(12))}}
    new = {"spec": {"items": [*range(2), 99, *range(3, 12)], "extra": {"a": {"b": 1, "c": [1, 2]}}}}
    new["spec"]["items"][10] = 100
    assert changed_paths(old, new) == ["spec.extra", "spec.items[2]", "spec.items[10]"]
    assert changed_paths(new, old) == ["spec.extra", "spec.items[2]", "spec.items[10]"]


def _tas_flavor(**labels: str) -> dict[str, Any]:
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "h100"},
           "spec": {"nodeLabels": {"gpufleet.io/node-group": "h100", **labels}, "topologyName": "gpufleet-topology", "nodeTaints": []}}  # fmt: skip
    flavor = k8s(obj)
    flavor.update(
        replaceOnChanges=["spec.nodeLabels", "spec.tolerations", "spec.topologyName"], deleteBeforeReplace=True
    )
    return flavor


def test_an_immutable_tas_flavor_field_is_a_replacement_in_the_diff() -> None:
    old, new = inv(_tas_flavor()), inv(_tas_flavor(tier="gold"))
    (change,) = compare(old, new).changes
    assert (change.action, change.reasons) == (
        "replace",
        (
            "spec.nodeLabels.tier: (none) -> gold",
            "deleteBeforeReplace: its name is fixed, so the old object is deleted before the new one is created",
        ),
    )
    text = summary.text(compare(old, new), "a", "b")
    assert "+- resourceflavor-cluster-h100 (kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor)" in text
    assert "replaces because deleteBeforeReplace: its name is fixed" in text
    # A field the API server updates in place stays an update.
    moved = inv(_tas_flavor())
    moved["resourceflavor-cluster-h100"]["inputs"]["spec"]["nodeTaints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert [c.action for c in compare(old, moved).changes] == ["update"]


def test_a_reserved_group_costs_its_reservation_at_any_size() -> None:
    """An ODCR is billed for every reserved instance whether it runs or not: the node group's reserved-instances
    tag (written by the node group builder) makes minSize 0 cost 4 instances, and maxSize 6 cost 6."""
    ng = node_group("h100")
    ng["inputs"]["scalingConfig"] = {"minSize": 0, "maxSize": 6, "desiredSize": 0}
    ng["inputs"]["tags"] = {"gpufleet.io/reserved-instances": "4"}
    [cost] = fleet_cost([ng])
    hourly = 8 * cost.gpu_hour_usd if cost.gpu_hour_usd else 0.0
    assert cost.reserved == 4
    assert (cost.monthly(0), cost.monthly(6)) == (4 * hourly * 730, 6 * hourly * 730)
    unreserved = copy.deepcopy(ng)
    unreserved["inputs"]["tags"] = {}
    report = compare(inv(unreserved), inv(ng))
    text = summary.text(report, "a", "b")
    assert (
        "h100: p5.48xlarge x 0..6 (8 GPUs/node) -> p5.48xlarge x 0..6 (8 GPUs/node, 4 reserved): min +$160,717" in text
    ), text


def _headroom(group: str, replicas: int) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "gpufleet-headroom", "gpufleet.io/node-group": group}
    return res(
        f"deployment-gpufleet-system-headroom-{group}",
        "kubernetes:apps/v1:Deployment",
        {
            "metadata": {"name": f"headroom-{group}", "namespace": "gpufleet-system", "labels": labels},
            "spec": {"replicas": replicas},
        },
    )


def test_headroom_nodes_count_in_the_idle_cost() -> None:
    ng = node_group("l40s", "Inference")
    ng["inputs"]["instanceTypes"] = ["g6e.12xlarge"]
    ng["inputs"]["scalingConfig"] = {"minSize": 0, "maxSize": 4, "desiredSize": 0}
    old, new = inv(ng), inv(ng, _headroom("l40s", 2))
    [cost] = fleet_cost(new.values())
    assert (cost.min_size, cost.headroom, cost.idle_size) == (0, 2, 2)
    # 2 warm nodes x USD 10.49264 an hour (g6e.12xlarge list price) x 730 h = USD 15,319 a month; maxSize unchanged
    assert (
        "  l40s: g6e.12xlarge x 0..4 (4 GPUs/node) -> g6e.12xlarge x 0..4 (4 GPUs/node, headroom 2): min +$15,319,"
        " max $0"
    ) in summary.text(compare(old, new), "a", "b").splitlines()
