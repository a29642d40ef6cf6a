"""``python -m toolscript``."""

from toolscript.cli.entry import main

main()
