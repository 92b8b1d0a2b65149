"""The importer's one-line error type, shared by the framework importers."""

from common.errors import first_line  # noqa: F401 - the importers' one-line text


class ImportFailure(Exception):
    """A problem with the model or its inputs, reported as one line."""
