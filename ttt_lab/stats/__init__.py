"""Statistics of studies in one place: the two decision procedures (`anytime`: a betting confidence
sequence; `fixed`: exact sign-flip tests at declared looks), their multiplicity and spending, the
projection of seeds to settle, the collapse endpoint, rates and aggregates, and the simulators
that measure every procedure's error rates (`benchmarks/bench_decisions.py`)."""
