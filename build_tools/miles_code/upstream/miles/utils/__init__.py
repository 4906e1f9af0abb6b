"""Utility package root for Miles."""
