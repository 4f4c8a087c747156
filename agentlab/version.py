"""The package version, in one place (stored runs record it with the git commit)."""

__all__ = ["__version__"]

__version__ = "0.2.0"
