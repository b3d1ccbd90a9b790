# SPDX-License-Identifier: MIT
# python_template.py - a Python template (after python_run.py): argv is PATH STDIN PRELOAD HELPER
# SOCK INIT BPF MPL MPL_NAME LANDLOCK, the last ones fds and flags the library passes. Imports the
# preload once, then hands control to the helper module (lib/jail/tpl_helper.c), which forks one
# walled run per request of the library. In a run (the helper returned 0) it reseeds what the
# fork shared and copies the pages a run writes first (_execbox_prepare), waits on fd 3 for the
# go byte, and runs PATH exactly as a cold start would; at the end it reports to the run's init
# and stops rather than exits (eb_init_loop_done), so the result does not wait for the exit.
def _execbox_template():
    import gc
    import ctypes
    path, stdin_path, preload = sys.argv[1], sys.argv[2], sys.argv[3]
    helper, sock, init, bpf, mpl = (int(a) for a in sys.argv[4:9])
    mpl_name, landlock = sys.argv[9], int(sys.argv[10])
    _execbox_preload(preload, path)
    _execbox_np_reseed_ahead()  # only forks reseed: a warm interpreter's own seed stands
    # PyDLL: the call keeps the GIL, so the helper may run CPython's fork hooks around its forks.
    serve = ctypes.PyDLL('/proc/self/fd/%d' % helper).eb_tpl_serve
    serve.argtypes = [ctypes.c_int] * 4 + [ctypes.c_char_p, ctypes.c_int]
    serve.restype = ctypes.c_int
    os.close(helper)
    gc.collect()
    gc.freeze()
    r = serve(sock, init, bpf, mpl, mpl_name.encode(), landlock)
    if r != 0:
        os._exit(1)
    _execbox_run(path, stdin_path, True, True)


_execbox_template()
