"""Inputs (sources) and outputs (the Parquet sink) of a run."""
