"""Templates of the generated TypeScript, shipped inside the package."""
