# SPDX-License-Identifier: MIT
# main.py - the Python side of runner.mjs: refuses imports that would need Pyodide's CDN with a
# clear message, then runs the program as `python3 FILE` does and returns its exit status.
import importlib.abc
import sys
import traceback


class _Offline(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: consulted only for modules nothing else found."""

    def __init__(self, offline, unvendored):
        self.offline = set(offline)
        self.unvendored = set(unvendored)

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in self.offline:
            raise ModuleNotFoundError(
                f"No module named '{top}': the pyodide backend runs offline, and only the "
                "Python standard library ships with it ('micropip' and Pyodide's packages "
                "are downloaded from its CDN, which the sandbox cannot reach)", name=top)
        if top in self.unvendored:
            raise ModuleNotFoundError(
                f"No module named '{top}': Pyodide ships this standard-library module as a "
                "separate download, which the offline pyodide backend cannot fetch", name=top)
        return None


def _run(program, offline, unvendored):
    sys.meta_path.append(_Offline(offline, unvendored))
    sys.argv = [program]
    sys.path[0:0] = ["/workspace"]
    with open(program, "rb") as f:
        source = f.read()
    ns = {"__name__": "__main__", "__file__": program, "__builtins__": __builtins__}
    try:
        code = compile(source, program, "exec")
        exec(code, ns)
        status = 0
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code & 0xFF
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except BaseException as e:  # noqa: BLE001 - the program's own uncaught exception
        tb = e.__traceback__
        # Drop this function's frame, as CPython's own traceback starts at the program.
        if tb is not None and tb.tb_frame.f_code is _run.__code__:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        status = 1
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:  # noqa: BLE001
            pass
    return status


_run(_execbox_program, _execbox_offline, _execbox_unvendored)  # noqa: F821
