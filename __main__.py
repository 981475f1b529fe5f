from gpufleet.components.program import run

run()
