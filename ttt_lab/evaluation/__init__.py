"""Evaluation of a player against a suite of opponents."""
