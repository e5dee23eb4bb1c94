"""The repository's benchmark and validation scripts (not part of the perfmodel wheel).

A package only so that ``benchmarks.harness`` imports by one name from the scripts, the tests and
``python -m benchmarks.harness.<module>`` run from the repository root."""

__all__: list[str] = []
