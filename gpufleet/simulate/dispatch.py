"""Which worker of a MultiKueue fleet would take a workload submitted to the manager (issue 44 item 6;
docs/multi-cluster.md, "How a workload is dispatched").

Why, with sources: docs/explain-model.md, "Design notes", gpufleet/simulate/dispatch.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.simulate.verdict import Verdict

# What the manager decides before it dispatches (gpufleet.simulate.verdict's stages up to Kueue's admission).
MANAGER_STAGES = ("api", "access", "admission")
# incrementaldispatcher.go incrementalDispatcherRoundTimeout.
ROUND_MINUTES = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Nominated:
    cluster: str
    round: int  # 1-based: the round that nominates it
    verdict: Verdict

    @property
    def after_minutes(self) -> int:
        return ROUND_MINUTES * (self.round - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Dispatch:
    manager: str
    verdict: Verdict  # the manager's
    step_size: int
    workers: tuple[Nominated, ...] = ()  # every worker in the order nominated; empty when the manager stops it

    @property
    def stopped_at_manager(self) -> bool:
        return not self.workers

    @property
    def takers(self) -> tuple[Nominated, ...]:
        """The workers of the first round where it runs somewhere (one, or several racing), else none."""
        runs = [w for w in self.workers if w.verdict.runs]
        if not runs:
            return ()
        first = runs[0].round
        return tuple(w for w in runs if w.round == first)

    @property
    def runs(self) -> bool:
        return bool(self.takers)

    def json(self) -> dict[str, Any]:
        takers = self.takers
        return {
            "kind": self.verdict.kind,
            "namespace": self.verdict.namespace,
            "name": self.verdict.name,
            "runs": self.runs,
            "manager": {"cluster": self.manager, "admitted": not self.stopped_at_manager, **_verdict(self.verdict)},
            "stepSize": self.step_size,
            "workers": [
                {"cluster": w.cluster, "round": w.round, "afterMinutes": w.after_minutes, **w.verdict.json()}
                for w in self.workers
            ],
            "dispatchedTo": [w.cluster for w in takers],
            "waitsRounds": takers[0].round - 1 if takers else None,
        }


def _verdict(verdict: Verdict) -> dict[str, Any]:
    out = verdict.json()
    return {k: out[k] for k in ("clusterQueue", "flavor", "reasons") if k in out}


def rounds(workers: Sequence[str], step_size: int) -> list[list[str]]:
    """The workers each round nominates anew, in the MultiKueueConfig's order."""
    return [list(workers[i : i + step_size]) for i in range(0, len(workers), step_size)]


def manager_admits(verdict: Verdict) -> bool:
    """Whether the manager reserves quota: it runs nothing itself, so a verdict that fails only past Kueue's
    admission (scheduling: the manager has no GPU node) is an admitted one."""
    if verdict.runs:
        return True
    return bool(verdict.reasons) and verdict.reasons[0].stage not in MANAGER_STAGES


def dispatch(manager: str, verdict: Verdict, workers: Sequence[tuple[str, Verdict]], step_size: int) -> Dispatch:
    """`workers`: each worker's verdict, in the MultiKueueConfig's order."""
    if not manager_admits(verdict):
        return Dispatch(manager=manager, verdict=verdict, step_size=step_size)
    by_name = dict(workers)
    nominated = tuple(
        Nominated(cluster=name, round=n, verdict=by_name[name])
        for n, batch in enumerate(rounds([w for w, _ in workers], step_size), 1)
        for name in batch
    )
    return Dispatch(manager=manager, verdict=verdict, step_size=step_size, workers=nominated)


def text(d: Dispatch) -> list[str]:
    v = d.verdict
    head = f"{v.kind} {v.namespace}/{v.name}"
    if d.stopped_at_manager:
        lines = [f"{head}: would not run: the manager {d.manager} does not admit it, so no worker is nominated"]
        for r in v.reasons:
            lines += [f"  {r.stage}: {r.message}", f"  fix: {r.fix}"]
        return lines
    via = f"ClusterQueue {v.cluster_queue}" + (f", flavor {v.flavor}" if v.flavor else "")
    takers = d.takers
    if takers:
        names = " or ".join(w.cluster for w in takers)
        wait = (
            "at once"
            if takers[0].round == 1
            else f"after {takers[0].round - 1} round(s) unadmitted ({takers[0].after_minutes} minutes)"
        )
        race = " (nominated together: whichever admits it first)" if len(takers) > 1 else ""
        lines = [f"{head}: runs on {names}{race}, {wait}; admitted on the manager {d.manager} through {via}"]
    else:
        lines = [
            f"{head}: would not run on any worker; admitted on the manager {d.manager} through {via}, it waits there"
        ]
    lines.append(f"  dispatch (Incremental, stepSize {d.step_size}):")
    last = takers[0].round if takers else None
    for w in d.workers:
        if last is not None and w.round > last:
            break
        when = "at once" if w.round == 1 else f"after {w.after_minutes} minutes"
        wv = w.verdict
        if wv.runs:
            lines.append(
                f"  round {w.round} ({when}): {w.cluster} runs it, through ClusterQueue {wv.cluster_queue}, flavor"
                f" {wv.flavor}, on node group {wv.node_group}"
            )
        else:
            first = wv.reasons[0] if wv.reasons else None
            why = f": {first.stage}: {first.message}" if first else ""
            lines.append(f"  round {w.round} ({when}): {w.cluster} would not run it{why}")
            if first and not takers:
                lines.append(f"    fix: {first.fix}")
    return lines
