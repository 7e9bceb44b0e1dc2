"""Diagnosis: incidents, progress, baseline, the causal ranking and its assembly."""
