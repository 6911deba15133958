"""Static checks of reward code as the person types: syntax (line and column) and undefined names.

Nothing is executed here (the app's process may run this on every edit); loading the code and
checking signatures happens in a child process (`rewards.check`). Undefined names are found with
`symtable`: a name a function reads that is neither its own, nor defined or imported at the top
of the file, nor a Python builtin.
"""

from __future__ import annotations

import builtins
import symtable


def syntax_problem(source: str, filename: str = "rewards.py") -> dict | None:
    """{"line", "column", "message"} for the first syntax error, or None."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return {"line": exc.lineno or 0, "column": exc.offset or 0, "message": exc.msg}
    return None


def undefined_names(source: str, filename: str = "rewards.py") -> list[dict]:
    """[{"name", "function"}] for names read but never defined (typos, a missing import)."""
    try:
        top = symtable.symtable(source, filename, "exec")
    except SyntaxError:
        return []
    module_names = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    known = module_names | set(dir(builtins)) | {"__name__", "__file__", "__doc__"}
    found: list[dict] = []

    def walk(table: symtable.SymbolTable, where: str) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and sym.is_global() and not sym.is_declared_global() and sym.get_name() not in known:
                found.append({"name": sym.get_name(), "function": where})
        for child in table.get_children():
            anonymous = child.get_name() in ("listcomp", "setcomp", "dictcomp", "genexpr", "lambda")
            walk(child, child.get_name() if child.get_type() == "function" and not anonymous else where)

    for child in top.get_children():
        walk(child, child.get_name())
    for sym in top.get_symbols():  # module-level code reading an undefined name
        if sym.is_referenced() and not (sym.is_assigned() or sym.is_imported()) and sym.get_name() not in known:
            found.append({"name": sym.get_name(), "function": "<top level>"})
    seen, unique = set(), []
    for item in found:
        key = (item["name"], item["function"])
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique
