"""Inputs and their bytes: sources, job discovery, spooling, read-back."""
