"""No function in src/agentgrpo is longer than `MAX_LINES` lines unless its docstring says why, in a line that
starts with `REASON` ("Long because: ..."). A long function is split into named steps; the few that are better
whole (a tight decoding loop) say so where a reader sees it. A planted long function proves the check bites."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "agentgrpo"
MAX_LINES = 60  # from the `def` line to the last line of the body, docstring included
REASON = "Long because:"


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[tuple[str, int, int]]:
    """(qualified name, first line, lines) of each function in ``source`` longer than ``max_lines`` whose
    docstring has no line starting with `REASON`."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = child.end_lineno - child.lineno + 1
                    doc = ast.get_docstring(child) or ""
                    said = any(line.strip().startswith(REASON) for line in doc.splitlines())
                    if lines > max_lines and not said:
                        found.append((name, child.lineno, lines))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_no_function_is_long_without_saying_why():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        hits = long_functions(path.read_text())
        if hits:
            found[relative] = hits
    assert found == {}, (f"functions over {MAX_LINES} lines: split them into named steps, or say why they are "
                         f"better whole in a docstring line starting {REASON!r}: {found}")


def test_a_planted_long_function_is_found():
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    source = (
        f"def short():\n    return 1\n\n"
        f"def long_one():\n{body}    return 0\n\n"
        f"class Box:\n    def method(self):\n{body.replace('    ', '        ')}        return 0\n\n"
        f'def explained():\n    """Decodes.\n\n    {REASON} a tight loop.\n    """\n{body}    return 0\n\n'
        f"def just_fits():\n{''.join(f'    y{i} = {i}' + chr(10) for i in range(MAX_LINES - 2))}    return 0\n"
        f"async def outer():\n    def inner():\n{body.replace('    ', '        ')}        return 0\n    return inner\n"
    )
    found = long_functions(source)
    assert [(name, lines) for name, _, lines in found] == [
        ("long_one", MAX_LINES + 2), ("Box.method", MAX_LINES + 2), ("outer", MAX_LINES + 4),
        ("outer.inner", MAX_LINES + 2)]
