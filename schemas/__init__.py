"""JSON Schemas toolscript owns, shipped inside the package."""
