"""Synthetic dumps with known content, written through the readers' own layouts."""
