"""`python -m controller` runs the controller, as the `pizza-controller` console script does."""

from controller.cli import main

raise SystemExit(main())
