"""Benchmarks: `make bench`. Every figure is reported beside a baseline measured in the same process."""

from . import engine_loop, gate_scaling, import_time, web

engine_loop.report()
print()
import_time.report()
print()
gate_scaling.report()
print()
web.report()
