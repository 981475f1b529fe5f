"""Run `deploy(plan)` under Pulumi's mock runtime and record every registration: no CLI, no cloud, no network.

The mocks answer each resource with its inputs plus `<ref:id.attr>` placeholders for the attributes the plan
references, so what the recording shows is what `pulumi up` would be asked to create, with deploy-time values
named rather than invented. A stack transformation sees the resource options (protect, retainOnDelete,
ignoreChanges, dependsOn, parent) that the mock monitor does not.
"""

from __future__ import annotations

import asyncio
import copy
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.stack import run_pulumi_func

from gpufleet.base.collector import rare_collections
from gpufleet.components.deploy import deploy
from gpufleet.plan.parts import Ref, RolloutPlan, references
from gpufleet.tree.write import Registration


class UnmockedInvoke(Exception):
    """An invoke the plan did not declare as a lookup: synth must never reach the cloud."""


def _placeholder(state: dict[str, Any], ref: Ref) -> None:
    """Put `<ref:resource.attribute>` at the attribute's (camelCase, dotted, [n]-indexed) path in state."""
    parts = ref.steps()
    node: Any = state
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        value: Any = str(ref) if last else ({} if not parts[i + 1].startswith("[") else [])
        if part.startswith("["):
            index = int(part[1:-1])
            while len(node) <= index:
                node.append({} if not last else None)
            if last or not isinstance(node[index], (dict, list)):
                node[index] = value
            node = node[index]
        else:
            if last or not isinstance(node.get(part), (dict, list)):
                node[part] = value
            node = node[part]


def _integral(value: Any) -> Any:
    """Inputs cross the engine as protobuf Structs, where every number is a double: give integers back."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


class RecordingMocks(pulumi_mocks.Mocks):
    def __init__(self, plan: RolloutPlan) -> None:
        self.referenced = references(plan)
        self.lookups = {res.type: res.id for stage in plan.included() for res in stage.content.resources if res.lookup}
        self.inputs: dict[str, tuple[str, dict[str, Any]]] = {}

    def _state(self, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        """The inputs echoed back, with placeholders where the plan references the resource. The monitor
        serializes the state at once, so unreferenced inputs are returned as they are; only a referenced
        resource's are copied, because the placeholders are written into them."""
        refs = self.referenced.get(name)
        if not refs:
            return inputs
        state = copy.deepcopy(inputs)
        for ref in sorted(refs, key=lambda r: r.attribute):
            _placeholder(state, ref)
        return state

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        # _integral builds new containers, so the recording shares nothing with what the SDK may still hold.
        self.inputs[args.name] = (args.typ, _integral(args.inputs))
        return f"<ref:{args.name}.id>", self._state(args.name, args.inputs)

    # Return a plain dict: the SDK's (dict, None) form raises, it iterates the second item
    # (pulumi/pulumi sdk/python/lib/pulumi/runtime/mocks.py @v3.259.0).
    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        if args.token not in self.lookups:
            raise UnmockedInvoke(f"synth reached an undeclared invoke {args.token}")
        return self._state(self.lookups[args.token], {})


# How long cancelled registrations may take to unwind once the program has ended or been interrupted.
_CANCEL_WAIT_SECONDS = 5.0
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _run_interruptibly(loop: asyncio.AbstractEventLoop, main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on `loop` so that a SIGINT or SIGTERM ends it: the signal's handler (the KeyboardInterrupt of
    SIGINT, the CLI's Terminated for SIGTERM) still raises at once, and it also stops the loop.

    Python raises a signal's exception in whatever the main thread is executing. When that is the Pulumi program
    itself, the runtime keeps the exception until every outstanding registration has ended
    (pulumi/runtime/stack.py run_pulumi_func), and one the program left half-made never ends: an interrupted synth
    waited forever. A stopped loop returns here whatever the runtime does with the exception, and the
    interrupt is raised again."""
    received: list[int] = []
    previous: dict[int, Callable[[int, Any], Any]] = {}
    if threading.current_thread() is threading.main_thread():  # only the main thread receives signals
        for sig in _INTERRUPTS:
            handler = signal.getsignal(sig)
            if callable(handler):  # a Python handler; the default action (SIG_DFL) ends the process by itself

                def stop_and_interrupt(signum: int, frame: Any, handler: Callable[[int, Any], Any] = handler) -> None:
                    received.append(signum)
                    loop.stop()
                    handler(signum, frame)

                previous[sig] = handler
                signal.signal(sig, stop_and_interrupt)
    try:
        loop.run_until_complete(main)
    except RuntimeError:
        if not received:  # not "Event loop stopped before Future completed" after a signal
            raise
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)
    if received:  # the runtime kept the interrupt: raise it here
        previous[received[0]](received[0], None)


@rare_collections()
def run_under_mocks(
    mocks: pulumi_mocks.Mocks,
    program: Callable[[], None],
    stack: str,
    transformation: Callable[[pulumi.ResourceTransformationArgs], None] | None = None,
) -> None:
    """Run `program` as a Pulumi program under `mocks`, on a fresh event loop and a fresh root stack."""
    loop = asyncio.new_event_loop()
    # A failed registration leaves sibling outputs failing and unawaited; the first error is raised below, so
    # the echoes of it ("Future exception was never retrieved") would only bury it.
    loop.set_exception_handler(lambda _loop, _context: None)
    asyncio.set_event_loop(loop)
    try:
        pulumi_settings.reset_options()  # a fresh root stack for every recording
        pulumi.runtime.set_mocks(mocks, project="gpufleet", stack=stack, preview=False)
        if transformation is not None:
            pulumi.runtime.register_stack_transformation(transformation)
        _run_interruptibly(loop, run_pulumi_func(program))
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            # Bounded: after an interrupt a task blocked in the mock monitor may never see its cancellation, and
            # the user's Ctrl-C must still end the run (the caller removes the staging directory and exits).
            loop.run_until_complete(asyncio.wait(pending, timeout=_CANCEL_WAIT_SECONDS))
        pulumi_settings.reset_options()
        loop.close()
        asyncio.set_event_loop(None)


def record(plan: RolloutPlan) -> list[Registration]:
    """Every resource `deploy(plan)` registers, with inputs and options, in registration order."""
    mocks = RecordingMocks(plan)
    options: dict[str, dict[str, Any]] = {}

    def capture(args: pulumi.ResourceTransformationArgs) -> None:
        opts = args.opts
        options[args.name] = {
            "type": args.type_,
            "parent": getattr(opts.parent, "_name", None) if opts.parent else None,
            "dependsOn": sorted({getattr(d, "_name", "?") for d in (opts.depends_on or [])}),  # type: ignore[union-attr]
            "protect": bool(opts.protect),
            "retainOnDelete": bool(opts.retain_on_delete),
            "ignoreChanges": list(opts.ignore_changes or []),
            "replaceOnChanges": list(opts.replace_on_changes or []),
            "deleteBeforeReplace": bool(opts.delete_before_replace),
        }
        return None

    def program() -> None:
        deploy(plan)

    run_under_mocks(mocks, program, plan.environment, capture)

    def registration(name: str, typ: str, inputs: dict[str, Any]) -> Registration:
        opt = options.get(name, {})
        return Registration(
            name=name,
            type=typ,
            parent=opt.get("parent"),
            depends_on=tuple(opt.get("dependsOn", ())),
            protect=opt.get("protect", False),
            retain_on_delete=opt.get("retainOnDelete", False),
            ignore_changes=tuple(opt.get("ignoreChanges", ())),
            replace_on_changes=tuple(opt.get("replaceOnChanges", ())),
            delete_before_replace=opt.get("deleteBeforeReplace", False),
            inputs=inputs,
        )

    # Every registration, stage components included, reaches the mock monitor; the options come from the
    # transformation.
    return [registration(name, typ, inputs) for name, (typ, inputs) in mocks.inputs.items()]
