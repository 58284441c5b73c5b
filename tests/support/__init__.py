"""Builders shared by the tests (and bench/): stand-in agent harnesses and the like."""
