"""Benchmarks: `make bench`. Every figure is reported beside a baseline measured in the same process."""
