"""sigform vs DSPy benchmarks: ``python -m benchmarks`` (see README.md)."""
