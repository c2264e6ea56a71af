from . import engine_loop, gate_scaling

engine_loop.report()
print()
gate_scaling.report()
