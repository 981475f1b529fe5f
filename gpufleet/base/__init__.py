"""What every layer uses: positioned errors, interrupts kept across finalizers, the garbage collector's thresholds
for synth, and the one renderer of gpufleet's templates."""
