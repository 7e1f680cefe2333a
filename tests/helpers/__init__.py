"""Helpers the tests share (oracles, small warehouses, checks); no tests here."""
