# SPDX-License-Identifier: MIT
# python_run.py - the part of Python's warm and template bootstraps that runs after everything
# was imported ahead of time: the shared definitions. Embedded into the library at build time and
# prepended to python_warm.py or python_template.py (run with `python3 -B -c`).
#
# _execbox_run waits for a byte on fd 3, then runs the file `path` as __main__ in a fresh module,
# with sys.argv, sys.path[0], stdin, globals and tracebacks as a cold `python3 -B FILE` has them.
# Shutdown is CPython's own sequence up to the point where only the interpreter's teardown of
# every imported module is left (2 ms bare, 50 ms with pandas): the exit status as SystemExit
# defines it, non-daemon threads joined, atexit callbacks, __main__'s globals cleared (so the
# user's objects are finalised and unclosed files flushed), a collection, stdio flushed; then
# os._exit (in a template's run, first the report to the run's init: see _execbox_file_runner).
# What is skipped is the teardown of the library modules themselves.
# atexit is imported here, before a template forks, although only a run's end uses it: no preload
# imports it (numpy and pandas do not), and its first import, through importlib, copies some 70
# of the template's pages into every fork that makes it. Every program sees it imported either
# way, as before: a run imported it ahead of the go byte.
import sys, os, atexit


def _execbox_preload(preload, path):
    for m in filter(None, preload.split(',')):
        try:
            __import__(m)
        except Exception:
            pass
    global _execbox_run_file, _execbox_report_done
    _execbox_run_file, _execbox_report_done = _execbox_file_runner()
    _execbox_warm_up()  # the first-call set-up of a run's path, done once here
    with open(sys.executable, 'rb') as f:
        f.read(1)


def _execbox_warm_up():
    # One throwaway run of an empty file, by the path a program takes (fopen, CPython's file
    # tokenizer, the compiler, the exec), and one print: in a fork, the pages of the template
    # that a run writes first are copied by this rather than by the program. A string compile
    # would take another tokenizer's path, warming pages no run uses (some 30 more faults in a
    # pandas fork). /dev/null is in every sandbox; without it, nothing is warmed.
    try:
        _execbox_run_file('/dev/null', {'__builtins__': __builtins__})
        print(end='')
    except Exception:
        pass


def _execbox_file_runner():
    # CPython's own runner of a script file (PyRun_FileExFlags): the tokenizer that
    # `python3 FILE` uses, so coding cookies, NUL bytes and undecodable bytes behave and fail
    # exactly as in a cold run; unlike the interpreter's main, it leaves SystemExit to us.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fopen = libc.fopen
    fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    fopen.restype = ctypes.c_void_p
    run = ctypes.pythonapi.PyRun_FileExFlags
    run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.py_object,
                    ctypes.py_object, ctypes.c_int, ctypes.c_void_p]
    run.restype = ctypes.py_object
    file_input = 257  # Py_file_input

    def run_file(path, globals_):
        fp = fopen(os.fsencode(path), b'rb')
        if not fp:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
        run(fp, os.fsencode(path), file_input, globals_, globals_, 1, None)  # closes fp

    # A template run's end (eb_init_loop_done in lib/proc/childlib.c): the exit status in the main
    # thread's name, then a stop. The run's init then kills the process and reports at once,
    # instead of after the exit's teardown of this copy of the template's memory. libc's own
    # calls, so that nothing the program changed in os runs after its end.
    prctl, kill = libc.prctl, libc.kill
    prctl.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    kill.argtypes = [ctypes.c_int, ctypes.c_int]

    def report_done(pid, status):
        if prctl(15, b'execbox-done%d' % status, 0, 0, 0) == 0:  # PR_SET_NAME
            kill(pid, 19)  # SIGSTOP
    return run_file, report_done


_execbox_np_reseed = None


def _execbox_np_reseed_ahead():
    # In a template, once: how each fork reseeds numpy's global RandomState, in the form numpy's
    # own seed() leaves (that of a cold start): key[0] 0x80000000, key[1:624] random, position
    # 623, no cached gaussian. The template's state is set to that form here, so a fork writes
    # only key[1:624], from the kernel, in place into the MT19937 bit generator's C state (624
    # key words, then the position) through a view made here. No SeedSequence and no set_state
    # in the fork: seed() copies some 120 of the template's pages into every fork, set_state
    # some 25 more than the view. The layout is checked here: a key written through the view
    # must read back from get_state(), with the position and no cached gaussian; else (another
    # numpy) the fork fills a key array and calls set_state. Whatever fails here leaves numpy
    # seeded from the kernel (never the probe key) and the forks calling seed().
    global _execbox_np_reseed
    np_random = sys.modules.get('numpy.random')
    if np_random is None:
        return
    try:
        import ctypes
        import numpy
        key = numpy.zeros(624, numpy.uint32)
        key[0] = 0x80000000
        state = ('MT19937', key, 623, 0, 0.0)
        np_random.set_state(state)  # no cached gaussian from here on
        bits = np_random.mtrand._rand._bit_generator
        view = None
        if type(bits).__name__ == 'MT19937':
            view = memoryview((ctypes.c_ubyte * 2500).from_address(
                bits.ctypes.state_address)).cast('B')
            probe = numpy.arange(1, 625, dtype=numpy.uint32) * numpy.uint32(2654435761)
            view[:2496] = probe.tobytes()
            s = np_random.get_state()
            if not (s[0] == 'MT19937' and (s[1] == probe).all() and s[2:] == (623, 0, 0.0)):
                view = None
        key[1:] = numpy.frombuffer(os.urandom(2492), numpy.uint32)  # the template's own
        np_random.set_state(state)
        if view is not None:
            def reseed(view=view[4:2496], bits=bits):  # bits: the owner of view's memory
                view[:] = os.urandom(2492)
        else:
            def reseed(words=memoryview(key[1:]).cast('B')):
                words[:] = os.urandom(2492)
                np_random.set_state(state)
        _execbox_np_reseed = reseed
    except Exception:
        try:
            np_random.seed()
        except Exception:
            pass


def _execbox_reseed():
    # A template's runs are forks of one process: whatever was seeded at import is the same in
    # every one of them unless it is seeded again from the kernel here. `random` already was, by
    # its own fork hook (os.register_at_fork), which the helper runs in the guest; tempfile's
    # names, uuid4 and secrets read the kernel themselves.
    np_random = sys.modules.get('numpy.random')
    if np_random is not None:
        try:
            if _execbox_np_reseed is not None:
                _execbox_np_reseed()  # this fork's copy of the template's state
            else:
                np_random.seed()  # the global RandomState, from the kernel's entropy
        except Exception:
            pass
    mp = sys.modules.get('multiprocessing.process')
    if mp is not None:
        try:
            mp.current_process().authkey = os.urandom(32)
        except Exception:
            pass


def _execbox_prepare(path, types, importlib):
    # A template's fork, ahead of the go byte: its own seeds, then the warm-up (a throwaway run of
    # an empty file and a print) and a module and loader as the run makes them, so that the pages
    # of the template that a run writes first (the interpreter's state, the tokenizer's and the
    # compiler's, stdout's) are copied now rather than during the run. Nothing of it is left where
    # the program could see it.
    _execbox_reseed()
    _execbox_warm_up()
    types.ModuleType('__main__')
    importlib.machinery.SourceFileLoader('__main__', path)


def _execbox_run(path, stdin_path, reseed, report=False):
    import types, builtins, importlib.machinery, atexit, gc
    if reseed:
        _execbox_prepare(path, types, importlib)
    go = b''
    while True:
        try:
            go = os.read(3, 1)
            break
        except InterruptedError:
            continue
    if go == b's':
        _execbox_session(reseed)  # never returns (lib/lang/python_session.py)
    os.close(3)
    if go != b'g':
        os._exit(0)
    me = os.getpid() if report else None  # a fork the program makes does not report
    fd = os.open(stdin_path, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    mod = types.ModuleType('__main__')
    mod.__file__ = path
    mod.__builtins__ = builtins
    mod.__cached__ = None
    mod.__annotations__ = {}
    mod.__loader__ = importlib.machinery.SourceFileLoader('__main__', path)
    sys.modules['__main__'] = mod
    sys.argv[:] = [path]
    sys.path[0] = os.path.dirname(path)
    status = 0
    del fd
    try:
        _execbox_run_file(path, mod.__dict__)
    except SystemExit as e:
        status = _execbox_exit_status(e)
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == '<string>':
            tb = tb.tb_next  # our own frames (this bootstrap runs as -c): a cold run has none
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        status = 1
    _execbox_shutdown(status, mod, atexit, gc, me)


def _execbox_exit_status(e):
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c & 0xff
    try:
        print(c, file=sys.stderr)
    except Exception:
        pass
    return 1


def _execbox_shutdown(status, mod, atexit, gc, me=None):
    try:
        t = sys.modules.get('threading')
        if t is not None:
            t._shutdown()
        atexit._run_exitfuncs()
        mod.__dict__.clear()
        gc.collect()
    except SystemExit as e:
        status = _execbox_exit_status(e)
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            status = status or 120
    if me is not None and os.getpid() == me:
        _execbox_report_done(me, status)
    os._exit(status)
