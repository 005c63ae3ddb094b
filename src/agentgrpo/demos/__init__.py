"""Demos on the embedded tiny model: the healthy one, and one per failure mode the doctor names."""
