"""Compatibility layers that keep earlier models' names and numbers, built on perfmodel's formulas."""
