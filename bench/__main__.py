from . import engine_loop, gate_scaling, web

engine_loop.report()
print()
gate_scaling.report()
print()
web.report()
