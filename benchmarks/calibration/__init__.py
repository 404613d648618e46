"""Simulated studies that measure every decision procedure's error rates and power
(`benchmarks/bench_decisions.py`; a reduced run in tests/benchmarks). Not shipped in the wheel."""
