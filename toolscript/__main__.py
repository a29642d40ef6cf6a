"""``python -m toolscript``."""

from toolscript.cli.main import main

main()
