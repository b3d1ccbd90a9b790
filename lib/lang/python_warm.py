# SPDX-License-Identifier: MIT
# python_warm.py - Python's warm start (after python_run.py): argv is PATH STDIN PRELOAD. Imports
# the preload, then waits on fd 3 and runs PATH. Each warm interpreter is its own process started
# from nothing: its hash seed and random state are its own. Everything the preload created is
# moved to the collector's permanent generation (gc.freeze) first, so that collections during
# and after the run scan only the run's own objects.
def _execbox_warm():
    import gc
    path, stdin_path, preload = sys.argv[1], sys.argv[2], sys.argv[3]
    _execbox_preload(preload, path)
    gc.collect()
    gc.freeze()
    _execbox_run(path, stdin_path, False)


_execbox_warm()
