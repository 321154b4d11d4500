"""The project's one table builder: a Markdown table from a header and rows (README and report).

    markdown_table(["variant", "seeds"], [["full", 5], ["1-step targets", 3]])

Cells are escaped by default (`|`, `<`, `>` and `&` as HTML entities), so that a text such as
"|TD error|" or "x < y" cannot break the table or open an HTML tag; pass `escape=False` for cells
that hold Markdown links or HTML on purpose. The header is written as given.
"""
import html


def cell(value) -> str:
    """One escaped table cell: the value as text, with | and the HTML characters as entities."""
    return html.escape(str(value), quote=False).replace("|", "&#124;")


def markdown_table(header, rows, escape: bool = True) -> str:
    """A Markdown table: a header row, a separator, one line per row (each row as long as the header)."""
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells for a header of {len(header)}: {row}")
        lines.append("| " + " | ".join(cell(c) if escape else str(c) for c in row) + " |")
    return "\n".join(lines)
