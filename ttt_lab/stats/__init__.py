"""Statistics of studies in one place: the endpoints (the probability of improvement, primary; the
mean difference; collapse), their anytime-valid confidence sequences and the fixed design's exact
sign tests, spending across looks, the projection of seeds to settle, rates and aggregates. The
simulators that measure every procedure's error rates live beside their benchmark
(`benchmarks/calibration/`), not in the package."""
