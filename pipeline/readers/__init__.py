"""Readers: raw dump files into canonical Arrow tables. One subpackage per layout generation."""
