"""`python -m chronomem` runs the CLI."""

from chronomem.cli import main

raise SystemExit(main())
