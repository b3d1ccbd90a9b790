# SPDX-License-Identifier: MIT
# python_session.py - a Python session (after python_run.py, before python_warm.py or
# python_template.py): entered when the go byte on fd 3 is 's'. Fd 3 is then a SOCK_SEQPACKET
# socket to the library (lib/core/cells.c). This process is the session's state; each cell arrives
# as one message with its fds (stdout, stderr, status, results, code, stdin) and runs in a fork
# of the state (its own process group), made ahead of the request. The fork that ends its cell
# normally becomes the new state: it tells the old one, which exits. A fork that fails is reaped
# by the state, which kills what the cell left in its process group and reports the status: the
# state is then exactly the one from before the cell. Everything here runs inside the sandbox's
# walls; the library trusts none of it.

_EXECBOX_CELL_FDS = 6  # out, err, status, results, code, stdin


def _execbox_session(reseed):
    import socket, json, fcntl, random, builtins, types, signal, time
    if reseed:
        _execbox_reseed()
    # Out of the way of the cells' own fds, and not inherited by what they exec.
    fd = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(3)
    sock = socket.socket(fileno=fd)
    nul = os.open('/dev/null', os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(nul, i)
    os.close(nul)
    mod = types.ModuleType('__main__')
    mod.__builtins__ = builtins
    mod.__annotations__ = {}
    sys.modules['__main__'] = mod
    sys.argv[:] = ['']
    sys.path[0] = ''
    _execbox_session_hooks(mod)
    sock.send(b'{"t": "ready"}')
    while True:
        # The next cell's process is forked ahead of the request (a standby): the cell then
        # costs no fork. It waits for the cell and tells the state over ch: 'c' (with the
        # cell's status pipe, for the state to report a failure on), then 'p' if it becomes
        # the new state.
        ch, ch_w = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        rstate = random.getstate()
        pid = _execbox_fork()
        if pid == 0:
            ch.close()
            random.setstate(rstate)  # the fork hook reseeded it: a cell continues the state
            os.setpgid(0, 0)  # the cell's own group: the state kills what it leaves if it fails
            m, fds = _execbox_take_cell(sock)
            if m is None:
                os._exit(0)  # the library is gone
            _execbox_send_fd(ch_w, b'c' + json.dumps(m).encode(), fds[2])
            _execbox_cell(sock, m, fds, ch_w, mod)
            continue  # this process is the state now: fork the next standby
        ch_w.close()
        promoted, m, status_w = _execbox_wait_cell(pid, ch)
        ch.close()
        if promoted:
            os._exit(0)  # the cell's process carries on as the state
        while True:
            try:
                _, st = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                st = 0x7f00
                break
        try:
            os.killpg(pid, signal.SIGKILL)  # what the cell left running
        except OSError:
            pass
        if status_w is None:
            time.sleep(0.05)  # a standby that died idle (killed): do not spin
            continue
        _execbox_status(status_w, m, m['exit'], st)
        os.close(status_w)


def _execbox_fork():
    # A cell that was just rolled back may leave processes that are killed but not yet reaped
    # by the sandbox's init, still counted against the pids limit: the next standby's fork
    # waits for them (a bounded while), rather than ending the session.
    import time
    deadline = time.monotonic() + 10
    while True:
        try:
            return os.fork()
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _execbox_take_cell(sock):
    import json
    while True:
        try:
            msg, fds = _execbox_recv_fds(sock)
        except InterruptedError:
            continue
        if not msg:
            return None, None
        try:
            m = json.loads(msg)
            if m.get('t') == 'cell' and len(fds) == _EXECBOX_CELL_FDS:
                return m, fds
        except Exception:
            pass
        for f in fds:
            os.close(f)


def _execbox_send_fd(ch, data, fd):
    import array, socket
    ch.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])


def _execbox_recv_fds(sock):
    import array, socket
    fds = array.array('i')
    msg, anc, flags, _ = sock.recvmsg(65536, socket.CMSG_SPACE(fds.itemsize * 8))
    for level, kind, data in anc:
        if level == 1 and kind == 1:  # SOL_SOCKET, SCM_RIGHTS
            fds.frombytes(data[:len(data) - (len(data) % fds.itemsize)])
    out = list(fds)
    for f in out:
        os.set_inheritable(f, False)
    return msg, out


def _execbox_wait_cell(pid, ch):
    # Follows the standby pid: (True, ...) once it says it is the new state ('p'); (False, m,
    # status_w) once it ended (its pidfd turns readable, or ch closes) without saying so; m and
    # status_w are None when it had taken no cell.
    import json, select
    m = status_w = None
    try:
        pfd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        pfd = -1
    watch = [ch] + ([pfd] if pfd >= 0 else [])
    try:
        while True:
            try:
                ready, _, _ = select.select(watch, [], [])
            except InterruptedError:
                continue
            if ch in ready:
                try:
                    b, fds = _execbox_recv_fds(ch)
                except InterruptedError:
                    continue
                if b[:1] == b'c' and len(fds) == 1 and status_w is None:
                    status_w = fds[0]
                    m = json.loads(b[1:])
                    continue
                for f in fds:
                    os.close(f)
                if b == b'p':
                    return True, m, status_w
                if b:
                    continue
                if pfd < 0:
                    return False, m, status_w
                watch = [pfd]  # closed: wait for the process itself
                continue
            return False, m, status_w
    finally:
        if pfd >= 0:
            os.close(pfd)


def _execbox_status(fd, m, kind, status):
    import struct
    msg = struct.pack('=ii', kind, status).ljust(m['msg_size'], b'\0')
    try:
        os.write(fd, msg)
    except OSError:
        pass


def _execbox_session_hooks(mod):
    import builtins
    import warnings
    # plt.show() under the Agg backend only warns: figures are collected at the end of the cell.
    warnings.filterwarnings('ignore', message='.*non-interactive, and thus cannot be shown')
    warnings.filterwarnings('ignore', message='Matplotlib is currently using agg')
    if not hasattr(builtins, 'display'):
        builtins.display = _execbox_display


_execbox_results = []
# The cell's rich outputs against what the library keeps (its cell message: rich_max outputs,
# rich_bytes_max bytes of them in all, a results file of at most results_max bytes): left_u is
# what is left of the bytes as the library counts them (UTF-8), left_e of the file (JSON);
# dropped counts the outputs past rich_max, cut those cut or left out for size.
_execbox_cap = {}
_EXECBOX_MIME = {'text': 'text/plain', 'html': 'text/html', 'markdown': 'text/markdown',
                 'svg': 'image/svg+xml', 'png': 'image/png', 'jpeg': 'image/jpeg',
                 'latex': 'text/latex', 'json': 'application/json',
                 'javascript': 'application/javascript'}
_EXECBOX_MARK_ROOM = 256  # bytes kept back for each form's marker
_EXECBOX_HEAD = 4096  # characters of a cut text/plain form kept before its marker


def _execbox_cap_start(m):
    c = _execbox_cap
    c['max'], c['bytes'] = m['rich_max'], m['rich_bytes_max']
    c['left_u'] = c['bytes']
    # The file also holds the keys, the is_main_result flags and JSON's escapes; half of what
    # the library reads is for the forms' escaped text, the rest is room to spare.
    c['left_e'] = m['results_max'] // 2
    c['dropped'] = c['cut'] = 0


def _execbox_full():
    if len(_execbox_results) >= _execbox_cap['max']:
        _execbox_cap['dropped'] += 1
        return True
    return False


def _execbox_size(n):
    mib = 1 << 20
    if n < 1024:
        return '%d bytes' % n
    if n % mib == 0:
        return '%d MiB' % (n // mib)
    if n < mib:
        return '%.1f KiB' % (n / 1024)
    return '%.1f MiB' % (n / mib)


def _execbox_measure(s):
    # s as the library will take it (valid UTF-8: a lone surrogate would fail the whole file),
    # its size in UTF-8 and as a JSON string.
    import json
    try:
        u = len(s.encode('utf-8'))
    except UnicodeEncodeError:
        s = s.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace')  # one U+FFFD each
        u = len(s.encode('utf-8'))
    e = u + 2 if u > _execbox_cap['bytes'] else len(json.dumps(s, ensure_ascii=False).encode())
    return s, u, e


def _execbox_add(r):
    # Appends rich output r, each form within what is left of the cell's bytes: a form that
    # does not fit is left out (text/plain: cut to its head) and the text says so, how big it
    # was and what the cap is. An output whose markers do not fit either is left out whole.
    c = _execbox_cap
    keys = [k for k in r if k != 'is_main_result' and isinstance(r[k], str)]
    room = _EXECBOX_MARK_ROOM * len(keys)
    out, sizes, notes = {}, {}, []
    for k in keys:
        s, u, e = _execbox_measure(r[k])
        used_u = sum(x[0] for x in sizes.values())
        used_e = sum(x[1] for x in sizes.values())
        left_u, left_e = c['left_u'] - used_u - room, c['left_e'] - used_e - room
        if u <= left_u and e <= left_e:
            out[k], sizes[k] = s, (u, e)
            continue
        before = c['bytes'] - c['left_u'] + used_u
        if u > c['bytes'] or before == 0:
            why = ('more than fits in the %s of rich outputs a cell keeps'
                   % _execbox_size(c['bytes']))
        else:
            why = ('the rich outputs before it took %s of the %s a cell keeps'
                   % (_execbox_size(before), _execbox_size(c['bytes'])))
        mime = _EXECBOX_MIME.get(k, k)
        if k == 'text':
            out[k] = s[:max(0, min(_EXECBOX_HEAD, left_u // 4, left_e // 6))]
            notes.append('[%s of %s cut here: %s]' % (mime, _execbox_size(u), why))
        else:
            notes.append('[%s of %s left out: %s]' % (mime, _execbox_size(u), why))
    if notes:
        out['text'] = '\n'.join(([out['text']] if out.get('text') else []) + notes)
        _, u, e = _execbox_measure(out['text'])
        sizes['text'] = (u, e)
        c['cut'] += 1
    u_all = sum(x[0] for x in sizes.values())
    e_all = sum(x[1] for x in sizes.values())
    if u_all > c['left_u'] or e_all > c['left_e']:
        return  # not even its markers fit: the cell's bytes are spent (counted as cut)
    c['left_u'] -= u_all
    c['left_e'] -= e_all
    out['is_main_result'] = r.get('is_main_result', False)
    _execbox_results.append(out)


def _execbox_display(*objs, **kw):
    for o in objs:
        if not _execbox_full():
            _execbox_add(_execbox_rich(o, False))


def _execbox_rich(v, main):
    import base64, json
    r = {'is_main_result': main}
    try:
        r['text'] = repr(v)
    except Exception as e:
        r['text'] = '<repr failed: %s>' % type(e).__name__
    forms = (('html', '_repr_html_'), ('markdown', '_repr_markdown_'), ('svg', '_repr_svg_'),
             ('png', '_repr_png_'), ('jpeg', '_repr_jpeg_'), ('latex', '_repr_latex_'),
             ('json', '_repr_json_'), ('javascript', '_repr_javascript_'))
    for key, meth in forms:
        if isinstance(v, type):
            break  # a class: its _repr_*_ are unbound functions
        try:
            f = getattr(v, meth, None)
            if not callable(f):
                continue
            out = f()
            if isinstance(out, tuple):
                out = out[0]
            if out is None:
                continue
            if key in ('png', 'jpeg'):
                if isinstance(out, str):
                    out = out.encode('ascii')
                else:
                    out = base64.b64encode(out)
                out = out.decode('ascii')
            elif key == 'json':
                out = json.dumps(out)
            elif not isinstance(out, str):
                continue
            r[key] = out
        except Exception:
            continue
    fig = sys.modules.get('matplotlib.figure')
    if fig is not None and isinstance(v, fig.Figure) and 'png' not in r:
        png = _execbox_fig_png(v)
        if png:
            r['png'] = png
    return r


def _execbox_fig_png(f):
    import base64, io
    try:
        b = io.BytesIO()
        f.savefig(b, format='png', bbox_inches='tight')
        return base64.b64encode(b.getvalue()).decode('ascii')
    except Exception:
        return None


def _execbox_figures():
    plt = sys.modules.get('matplotlib.pyplot')
    if plt is None:
        return
    try:
        nums = plt.get_fignums()
    except Exception:
        return
    for n in nums:
        if _execbox_full():
            continue  # counted, not drawn
        try:
            f = plt.figure(n)
        except Exception:
            continue
        png = _execbox_fig_png(f)
        if png:
            try:
                text = repr(f)
            except Exception:
                text = '<Figure>'
            _execbox_add({'is_main_result': False, 'text': text, 'png': png})
    try:
        plt.close('all')
    except Exception:
        pass


def _execbox_cell(sock, m, fds, ch, mod):
    import ast, json, linecache, tokenize, io
    out, err, status_w, res_w, code_fd, in_fd = fds
    sock.send(b'{"t": "started"}')  # the library learns our pid from the kernel
    while True:
        try:
            go = sock.recv(64)
            break
        except InterruptedError:
            continue
    if go != b'{"t": "go"}':
        os._exit(125)
    os.dup2(in_fd, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for f in (in_fd, out, err):
        os.close(f)
    code = b''
    while True:
        chunk = os.read(code_fd, 1 << 20)
        if not chunk:
            break
        code += chunk
    os.close(code_fd)
    n = m['n']
    name = '<cell-%d>' % n
    status, failed = 0, False
    del _execbox_results[:]
    _execbox_cap_start(m)
    try:
        try:
            enc, _ = tokenize.detect_encoding(io.BytesIO(code).readline)
            text = code.decode(enc)
        except Exception:
            text = None
        if text is not None:
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        tree = ast.parse(code, name, 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        g = mod.__dict__
        exec(compile(tree, name, 'exec'), g)
        if last is not None:
            v = eval(compile(last, name, 'eval'), g)
            if v is not None:
                if not _execbox_full():
                    _execbox_add(_execbox_rich(v, True))
                g['_'] = v
    except SystemExit as e:
        status = _execbox_exit_status(e)
        failed = status != 0
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == '<string>':
            tb = tb.tb_next  # our own frames (this bootstrap runs as -c)
        if sys.excepthook is sys.__excepthook__:
            import traceback  # it shows the cell's lines (from linecache); the default cannot
            traceback.print_exception(type(e), e.with_traceback(tb), tb)
        else:
            sys.excepthook(type(e), e.with_traceback(tb), tb)
        status, failed = 1, True
    _execbox_figures()
    # {"results": [...], "dropped": N, "cut": N}: every form is valid UTF-8 and the whole
    # within results_max (_execbox_add), so that the library never has to drop it all.
    c = _execbox_cap
    try:
        data = json.dumps({'results': _execbox_results, 'dropped': c['dropped'],
                           'cut': c['cut']}, ensure_ascii=False).encode('utf-8')
    except Exception:
        data = b''
    if not data or len(data) > m['results_max']:
        data = json.dumps({'results': [], 'dropped': c['dropped'],
                           'cut': c['cut'] + len(_execbox_results)}).encode()
    del _execbox_results[:]
    try:
        os.write(res_w, data)
    except OSError:
        pass
    os.close(res_w)
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    keep = not failed or (status == 1 and not m.get('rollback', True))
    if not keep:
        os._exit(status)
    # The new state: off the cell's pipes (the library sees their end), then the old state goes
    # ('p'), then the library hears how the cell ended.
    nul = os.open('/dev/null', os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(nul, i)
    os.close(nul)
    try:
        ch.send(b'p')
    except OSError:
        pass  # the old state is gone already (the cell killed it): we are the state anyway
    ch.close()
    _execbox_status(status_w, m, m['kept'], (status & 0xff) << 8)
    os.close(status_w)
