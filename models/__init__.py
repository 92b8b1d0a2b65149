"""Example models for the import stage: each module has a `make_model()` factory."""
