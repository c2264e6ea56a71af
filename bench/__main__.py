"""Benchmarks: `make bench`. Every figure is reported beside a baseline measured in the same process."""

from . import (
    approvals,
    concurrency,
    databases,
    engine_loop,
    gate_scaling,
    gateway,
    history,
    import_time,
    mcp,
    proxy,
    tracing,
    web,
)

for report in (
    engine_loop.report,
    import_time.report,
    gate_scaling.report,
    web.report,
    concurrency.report,
    history.report,
    databases.report,
    proxy.report,
    approvals.report,
    tracing.report,
    mcp.report,
    gateway.report,
):
    report()
    print()
