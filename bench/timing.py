"""Timing helpers: interleaved repetitions, medians, so two measurements in one process are comparable."""

import statistics
import time


def per_call_seconds(function, repeat=7, number=50):
    """The median over `repeat` batches of the mean time of one call in a batch of `number` calls."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            function()
        samples.append((time.perf_counter() - started) / number)
    return statistics.median(samples)


def compare(candidate, baseline, repeat=9, number=50):
    """Median per-call seconds of both, measured batch by batch in alternation so drift hits both alike."""
    candidate_samples, baseline_samples = [], []
    for _ in range(repeat):
        baseline_samples.append(per_call_seconds(baseline, repeat=1, number=number))
        candidate_samples.append(per_call_seconds(candidate, repeat=1, number=number))
    return statistics.median(candidate_samples), statistics.median(baseline_samples)


def milliseconds(seconds):
    return f"{seconds * 1000:8.3f} ms"


def microseconds(seconds):
    return f"{seconds * 1_000_000:9.1f} µs"
