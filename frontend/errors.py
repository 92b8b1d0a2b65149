"""The importer's one-line error type, shared by the framework importers."""


class ImportFailure(Exception):
    """A problem with the model or its inputs, reported as one line."""


def first_line(text, limit=300):
    """The first non-empty line of an error message, shortened."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return "(no message)"
