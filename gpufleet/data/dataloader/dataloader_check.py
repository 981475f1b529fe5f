"""gpufleet data loader check: is the training loop waiting on its input?

The method (the seed: "run the training loop against synthetic tensors ... and compare the step time"): run the
team's own training step twice, fed first by its real input pipeline (the DataLoader over the dataset, read from
where training reads it), then by synthetic input (the first batch, held in memory and fed again every step: the same
shapes and dtypes, so the same compute, and no input pipeline at all). A step that is slower with real data than with
synthetic data waits on input by the difference. `gpufleet diagnose --dataloader-log` reads the line this prints:

    gpufleet-dataloader-check rank=0 steps=50 real_step_seconds=0.4120 synthetic_step_seconds=0.2050

Environment:
  DATALOADER_CHECK_ENTRY   module:function (required). function() returns (batches, step): `batches` an iterable
                           of batches exactly as training builds it (e.g. its torch DataLoader, same num_workers,
                           batch size and dataset path), `step(batch)` one training step (to device, forward,
                           backward, optimizer step).
  DATALOADER_CHECK_STEPS   steps timed per run (default 50)
  DATALOADER_CHECK_WARMUP  steps run first and not timed, per run (default 5: CUDA context, cuDNN autotuning, the
                           loader's first workers)
  RANK                     printed as the rank (torchrun sets it; default 0)

Standard library only, and torch when it is there: each timed step ends with torch.cuda.synchronize() so the time is
the GPU's, not the launch queue's.
"""

import importlib
import itertools
import os
import sys
import time


def _synchronize():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(batches, step, warmup, steps):
    """(mean seconds of one step, the wait for its batch included, over `steps` steps after `warmup`; the first
    batch)."""
    iterator = iter(batches)
    first = None
    for batch in itertools.islice(iterator, warmup):
        first = batch if first is None else first
        step(batch)
    _synchronize()
    start = time.perf_counter()
    done = 0
    for batch in itertools.islice(iterator, steps):
        first = batch if first is None else first
        step(batch)
        done += 1
    _synchronize()
    if done < steps:
        raise SystemExit(f"gpufleet-dataloader-check: the loader gave {warmup + done} batches; need {warmup + steps}")
    return (time.perf_counter() - start) / steps, first


def main():
    entry = os.environ.get("DATALOADER_CHECK_ENTRY", "")
    module_name, _, function_name = entry.partition(":")
    if not module_name or not function_name:
        raise SystemExit("gpufleet-dataloader-check: set DATALOADER_CHECK_ENTRY=module:function")
    steps = int(os.environ.get("DATALOADER_CHECK_STEPS", "50"))
    warmup = int(os.environ.get("DATALOADER_CHECK_WARMUP", "5"))
    batches, step = getattr(importlib.import_module(module_name), function_name)()
    real, first = _timed(batches, step, warmup, steps)
    synthetic, _ = _timed(itertools.repeat(first), step, warmup, steps)
    rank = os.environ.get("RANK", "0")
    print(
        f"gpufleet-dataloader-check rank={rank} steps={steps} real_step_seconds={real:.4f}"
        f" synthetic_step_seconds={synthetic:.4f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
