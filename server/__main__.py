"""`python -m server`: the same as the `pizza-apiserver` console script."""

from server.cli import main

if __name__ == "__main__":
    main()
