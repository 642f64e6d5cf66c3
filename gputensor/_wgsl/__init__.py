"""WGSL kernel sources (package data)."""
