"""One-line error text, shared by every stage's CLI (each ends any error with one line)."""


def first_line(text, limit: int = 300) -> str:
    """The first non-empty line of an error message, shortened."""
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return "(no message)"
