# SPDX-License-Identifier: MIT
"""The jail's walls against attacks run inside it: each test asserts the specific outcome and
that the host is unharmed. (Syscall-level attacks are in jail_syscalls.py.)"""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (EXECBOX, STARTED, SKIP, SkipTest, Tests, check_pins, run,  # noqa: E402
                    run_json, split_pins)

J = ["-b", "jail"]
# How much slower than a host this machine is (the VM lane sets it: qemu without KVM emulates
# every instruction). Only the time a test allows for work it must finish scales by it; every
# wall and every limit under test stays as it is.
SLOWDOWN = float(os.environ.get("EXECBOX_TEST_SLOWDOWN", "1"))


def jail(code, *args, lang="python", **kw):
    res, p = run_json(J + ["-l", lang] + list(args) + ["-c", code], **kw)
    return res


def ok(res):
    assert res["exit_code"] == 0, f"exit {res['exit_code']}: {res['stderr'][-800:]}"
    return res["stdout"]


def cgroup_owner(path):
    """The pid of the execbox that named the cgroup execbox-PID-... (or execbox-PID.scope)."""
    try:
        return int(os.path.basename(path).split("-")[1].split(".")[0])
    except (IndexError, ValueError):
        return None


def owner_alive(path):
    """True when the cgroup execbox-PID-N belongs to a live process: a run of another execbox
    (a parallel test, another user of this host) still in flight, not a leftover of ours, since
    every execbox this test started has exited."""
    parts = os.path.basename(path).split("-")
    try:
        # execbox-PID-..., or a systemd scope execbox-PID.scope (cgroup v2 under systemd)
        os.kill(int(parts[1].split(".")[0]), 0)
        return True
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


def force_sweep():
    """The start-up sweep runs at most once per interval per host; forget when it last ran."""
    for stamp in glob.glob("/run/execbox/jail/.swept*") + glob.glob(
            os.path.join(tempfile.gettempdir(), f"execbox-jail-{os.geteuid()}/.swept*")):
        os.unlink(stamp)


def execbox_cgroups():
    """Every cgroup named by execbox at any depth of the host's tree (v1: per hierarchy; v2: below
    the root, a slice, a service or a scope), leaf execbox.main aside (execbox's own processes,
    not a run's)."""
    found = []
    for top, dirs, _ in os.walk("/sys/fs/cgroup"):
        if top.count("/") > 9:
            dirs[:] = []
            continue
        found += [os.path.join(top, d) for d in dirs if d.startswith("execbox-")]
    return found


class JailWalls(Tests):
    # ---- time ---------------------------------------------------------------------------
    def test_busy_loop_killed_at_deadline(self):
        r = jail("while True: pass", "-t", "1")
        assert r["timed_out"] and r["killed_reason"] == "timeout" and r["exit_code"] == 124, r
        assert r["execution_time"] < 5
        # The killed run's CPU time is still known (its cgroup counted it; no exit report came).
        assert r["cpu_time"] is not None and r["cpu_time"] > 0.05, r

    def test_long_sleep_killed_at_deadline(self):
        r = jail("import time; time.sleep(60)", "-t", "0.5")
        assert r["timed_out"] and r["exit_code"] == 124, r

    # ---- memory -------------------------------------------------------------------------
    def test_memory_bomb_oom_reported(self):
        # The wall first: a 64M cap refuses 128M in one run that we can see end.
        r = jail("b = []\nwhile True: b.append(bytearray(8 << 20))", "-m", "64M", "-t", "20")
        assert r["oom_killed"] is True, r
        assert r["killed_reason"] == "memory" and r["exit_code"] == 137, r
        assert r["error"]["name"] == "MemoryLimit", r["error"]
        assert ok(jail("print('alive')")) == "alive\n"  # the host runs the next one

    # ---- processes ------------------------------------------------------------------------
    def test_fork_bomb_capped(self):
        # Bounded first: 100 forks under pids=16 must stop short.
        code = ("import os\nn=0\nkids=[]\ntry:\n for i in range(100):\n  p=os.fork()\n"
                "  if p==0:\n   import time; time.sleep(5); os._exit(0)\n  kids.append(p); n+=1\n"
                "except OSError as e:\n print('stopped', n, e.errno)\n")
        out = ok(jail(code, "--pids", "16"))
        n = int(out.split()[1])
        assert out.startswith("stopped") and n < 16, out
        # Now the bomb, behind the wall just seen holding.
        r = jail("import os\nwhile True:\n try: os.fork()\n except OSError: pass", "--pids", "16",
                 "-t", "2")
        assert r["timed_out"], r
        assert subprocess.run(["true"]).returncode == 0  # the host can still fork

    def test_thread_bomb_capped(self):
        code = ("import threading,time\nn=0\ntry:\n for i in range(500):\n"
                "  threading.Thread(target=time.sleep, args=(3,), daemon=True).start(); n+=1\n"
                "except RuntimeError as e:\n print('stopped', n)\n")
        out = ok(jail(code, "--pids", "24"))
        assert out.startswith("stopped") and int(out.split()[1]) < 24, out
        assert subprocess.run(["true"]).returncode == 0

    def test_fd_exhaustion(self):
        code = ("import os\nfds=[]\ntry:\n while True: fds.append(os.open('/dev/null', os.O_RDONLY))\n"
                "except OSError as e: print(len(fds), e.errno)")
        n, err = ok(jail(code)).split()
        assert int(n) <= 1024 and int(err) == 24, (n, err)  # EMFILE

    # ---- disk -----------------------------------------------------------------------------
    def _fill(self, path, *args):
        before = shutil.disk_usage("/").free
        code = (f"import errno\nf=open('{path}','wb')\nn=0\ntry:\n while True:\n"
                "  f.write(b'x'*(1<<20)); f.flush(); n+=1\nexcept OSError as e: print(n, e.errno)")
        r = jail(code, *args)
        n, err = ok(r).split()
        assert int(err) in (27, 28), r  # EFBIG, ENOSPC
        assert before - shutil.disk_usage("/").free < (64 << 20)  # host disk untouched
        return int(n)

    def test_fill_tmp(self):
        assert self._fill("/tmp/fill", "--tmpfs", "8M", "--file-size", "1G") <= 8

    def test_fill_workspace(self):
        assert self._fill("/workspace/fill", "--workspace-size", "8M", "--file-size", "1G") <= 8

    def test_file_size_limit(self):
        assert self._fill("/tmp/big", "--file-size", "2M") <= 2

    def test_100mb_output(self):
        r = jail("import sys\nfor i in range(100): sys.stdout.write('x'*(1<<20))", "-t", "30")
        assert r["stdout_bytes"] >= 100 << 20 and r["stdout_truncated"], r["stdout_bytes"]
        assert len(r["stdout"]) < 2 << 20

    # ---- secrets --------------------------------------------------------------------------
    def test_canary_file_invisible(self):
        d = tempfile.mkdtemp(dir="/var/tmp")
        secret = os.path.join(d, "secret")
        with open(secret, "w") as f:
            f.write("CANARY-7731")
        try:
            code = (f"import os\nfor p in ['{secret}', '/root/.bash_history', '/etc/shadow']:\n"
                    " try: print(open(p).read())\n except OSError as e: print('no', e.errno)")
            out = ok(jail(code))
            assert "CANARY-7731" not in out and out.count("no ") == 3, out
        finally:
            shutil.rmtree(d)

    def test_canary_env_invisible(self):
        env = dict(os.environ, EXECBOX_CANARY="ENV-CANARY-99")
        res, _ = run_json(J + ["-c", "import os; print(sorted(os.environ))"], env=env)
        assert "EXECBOX_CANARY" not in res["stdout"] and res["exit_code"] == 0, res

    def test_traversal_and_symlinks(self):
        ws = tempfile.mkdtemp()
        d = tempfile.mkdtemp(dir="/var/tmp")
        secret = os.path.join(d, "secret")
        with open(secret, "w") as f:
            f.write("CANARY-TRAV")
        os.symlink(secret, os.path.join(ws, "link"))
        try:
            code = ("import os\nfor p in ['link', '../../..' + %r, '/workspace/../..' + %r]:\n"
                    " try: print(open(p).read())\n except OSError as e: print('no', e.errno)\n"
                    "os.symlink('/etc/passwd', 'out')\n" % (secret, secret))
            r = jail(code, "-w", ws)
            assert "CANARY-TRAV" not in ok(r) and r["stdout"].count("no ") == 3, r["stdout"]
            # The planted link is not followed by the host's listing.
            assert all(f["path"] != "out" or f.get("size", 0) == 0 for f in r["files"])
        finally:
            shutil.rmtree(ws)
            shutil.rmtree(d)

    # ---- filesystem ---------------------------------------------------------------------------
    def test_system_dirs_read_only(self):
        code = ("import errno\nfor p in ['/usr/x', '/etc/x', '/x', '/usr/bin/python3', '/proc/x']:\n"
                " try: open(p, 'w'); print('WROTE', p)\n except OSError as e: print(p, e.errno)")
        out = ok(jail(code))
        assert "WROTE" not in out, out

    def test_code_read_only(self):
        # /code holds the program (a warm run's is written by the library at run time): the
        # program may read it, never write, replace or remount it.
        code = ("import errno, os\n"
                "for p in ['/code/x', '/code/main.py']:\n"
                "    try:\n"
                "        open(p, 'a').write('x'); print('WROTE', p)\n"
                "    except OSError as e: print('refused', p, errno.errorcode[e.errno])\n"
                "try:\n"
                "    os.rename('/code/main.py', '/code/y'); print('RENAMED')\n"
                "except OSError as e: print('refused rename', errno.errorcode[e.errno])\n")
        out = ok(jail(code))
        assert "WROTE" not in out and "RENAMED" not in out, out
        assert out.count("refused") == 3, out
        # Refused by the mount, not only by the files' owner: the guest's view is read-only.
        assert "refused /code/x EROFS" in out, out

    def test_rm_rf_root(self):
        canary = tempfile.NamedTemporaryFile(dir="/var/tmp", delete=False)
        canary.write(b"still here")
        canary.close()
        try:
            # The whole visible tree is walked (every unlink of the read-only system refused):
            # seconds of work, more on a busy machine; what is tested is the host afterwards.
            r = jail("rm -rf --no-preserve-root / 2>/dev/null; echo done",
                     "-t", str(int(60 * SLOWDOWN)), lang="bash", timeout=180 * SLOWDOWN)
            assert "done" in r["stdout"], r
            assert open(canary.name).read() == "still here"
            assert os.path.exists("/usr/bin/python3") and os.path.exists("/etc/passwd")
            assert ok(jail("print(1)")) == "1\n"
        finally:
            os.unlink(canary.name)

    # ---- network --------------------------------------------------------------------------
    def test_no_network(self):
        tcp = socket.socket()
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(4)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        tp, up = tcp.getsockname()[1], udp.getsockname()[1]
        code = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {tp}), 2); print('TCP')\n"
                "except OSError as e: print('tcp', e.errno)\n"
                f"try:\n s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', {up})); print('UDPSENT')\n"
                "except OSError as e: print('udp', e.errno)\n"
                "try: socket.getaddrinfo('example.com', 80); print('DNS')\n"
                "except OSError as e: print('dns', e)\n")
        out = ok(jail(code))
        assert "TCP" not in out and "DNS" not in out, out
        tcp.settimeout(0.3)
        udp.settimeout(0.3)
        for s, what in ((tcp, "accept"), (udp, "recv")):
            try:
                s.accept() if what == "accept" else s.recv(10)
                raise AssertionError(f"a {what} arrived from the jail")
            except socket.timeout:
                pass
        tcp.close()
        udp.close()

    def test_host_unix_socket_unreachable(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "s.sock")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(path)
        srv.listen(1)
        srv.settimeout(0.3)
        try:
            out = ok(jail(f"import socket\ns=socket.socket(socket.AF_UNIX)\ntry: s.connect({path!r}); print('CONNECTED')\n"
                          "except OSError as e: print('no', e.errno)"))
            assert "CONNECTED" not in out
            try:
                srv.accept()
                raise AssertionError("connection arrived")
            except socket.timeout:
                pass
        finally:
            srv.close()
            shutil.rmtree(d)

    # ---- processes and devices ------------------------------------------------------------
    def test_host_processes_invisible_and_unkillable(self):
        sleeper = subprocess.Popen(["sleep", "30"])
        try:
            code = (f"import os\npids=[p for p in os.listdir('/proc') if p.isdigit()]\nprint(len(pids))\n"
                    f"try: os.kill({sleeper.pid}, 9); print('KILLED')\nexcept OSError as e: print('no', e.errno)")
            n, *rest = ok(jail(code)).split("\n")
            assert int(n) < 5, n
            assert sleeper.poll() is None  # still alive
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_host_command_line_unreadable(self):
        """Every process the code can see, pid 1 above all (a copy of the host process, cold),
        shows no part of the host's command line: `serve --token T` has its token there, and
        `run -c CODE` this very code with its marker."""
        marker = "host-argv-marker-5f1c"
        code = (f"# {marker}\nimport os\n"
                "for p in sorted(os.listdir('/proc')):\n"
                "    if p.isdigit():\n"
                "        try: print(p, repr(open(f'/proc/{p}/cmdline', 'rb').read()),\n"
                "                   open(f'/proc/{p}/comm').read().strip())\n"
                "        except OSError as e: print(p, 'unreadable', e.errno)\n")
        out = ok(jail(code))
        assert marker not in out and "execbox-" + "serve" not in out, out
        first = out.split("\n")[0].split(" ")
        assert first[0] == "1" and first[1].startswith("b'execbox-init"), out

    def test_signals_start_at_their_defaults(self):
        """Whatever the host ignores or handles, the program starts with every signal at its
        default action but those Python itself sets (SIGINT, SIGPIPE, SIGXFSZ): an ignored signal
        survives exec, and a guest that inherited an ignored SIGTERM or SIGUSR1 would behave
        unlike the same code run anywhere else."""
        code = ("import signal\n"
                "print(sorted(s for s in range(1, 65) if s not in (9, 19, 32, 33)\n"
                "             and signal.getsignal(s) not in (signal.SIG_DFL, None)))")

        def host_ignores():
            for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGALRM):
                signal.signal(sig, signal.SIG_IGN)

        p = subprocess.run([EXECBOX, "run", "-b", "jail", "--json", "-c", code],
                           capture_output=True, text=True, timeout=120 * SLOWDOWN,
                           preexec_fn=host_ignores)
        out = ok(json.loads(p.stdout)).strip()
        want = sorted(int(s) for s in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ))
        assert out == str(want), out

    def test_dangerous_devices_absent(self):
        code = ("import os\nfor p in ['/dev/mem','/dev/kmem','/dev/kmsg','/dev/sda','/dev/vda','/dev/port','/dev/tty']:\n"
                " try: os.open(p, os.O_RDONLY); print('OPENED', p)\n except OSError as e: print(p, e.errno)\n"
                "print(sorted(os.listdir('/dev')))")
        out = ok(jail(code))
        assert "OPENED" not in out, out

    def test_setuid_binaries_inert(self):
        binary = next((b for b in ["/usr/bin/newgrp", "/usr/bin/su", "/usr/bin/passwd", "/usr/bin/gpasswd"]
                       if os.path.exists(b) and os.stat(b).st_mode & 0o4000), None)
        if not binary:
            raise SkipTest("no setuid binary on this host")
        out = ok(jail(f"{binary} </dev/null >/dev/null 2>&1; id -u; grep -E '^(Uid|CapEff)' /proc/self/status",
                      lang="bash"))
        assert out.split()[0] == "1000" and "0000000000000000" in out, out

    def test_not_root_inside(self):
        out = ok(jail("import os\nprint(os.getuid(), os.geteuid(), os.getgid())\n"
                      "try: os.setuid(0); print('ROOT')\nexcept OSError as e: print('no', e.errno)"))
        assert out.startswith("1000 1000 1000") and "ROOT" not in out, out

    def test_daemon_does_not_outlive_run(self):
        ws = tempfile.mkdtemp()
        try:
            code = ("import os,time\nif os.fork()==0:\n os.setsid()\n if os.fork()==0:\n"
                    "  time.sleep(1.5); open('/workspace/late.txt','w').write('x'); os._exit(0)\n os._exit(0)\n"
                    "print('parent done')")
            assert "parent done" in ok(jail(code, "-w", ws))
            time.sleep(2.5)
            assert not os.path.exists(os.path.join(ws, "late.txt"))
        finally:
            shutil.rmtree(ws)

    def test_tmp_not_shared_between_runs(self):
        ok(jail("open('/tmp/marker','w').write('x'); open('/workspace/m','w').write('x')"))
        out = ok(jail("import os; print(os.path.exists('/tmp/marker'), os.path.exists('/workspace/m'))"))
        assert out == "False False\n", out

    def test_inherited_fds_closed(self):
        fd = os.open("/etc/hostname", os.O_RDONLY)
        os.set_inheritable(fd, True)
        try:
            p = subprocess.run([os.environ.get("EXECBOX", "build/execbox"), "run", "--json", "-b", "jail", "-c",
                                "import os; print(sorted(os.listdir('/proc/self/fd')))"],
                               capture_output=True, text=True, pass_fds=(fd,), timeout=60)
            import json
            out = json.loads(p.stdout)["stdout"]
            assert out.strip() == "['0', '1', '2', '3']", out  # 3 is the listing itself
        finally:
            os.close(fd)

    # ---- teardown -------------------------------------------------------------------------
    def test_concurrent_restaging(self):
        # Forget the staged /etc: every one of these execbox processes re-stages it while the
        # others run; the swap is atomic, so each run finds a complete /etc.
        marker = "/run/execbox/jail/.staged"
        if os.geteuid() != 0 or not os.path.exists(marker):
            raise SkipTest("needs root's /run/execbox stage")
        os.unlink(marker)
        cmd = [os.environ.get("EXECBOX", "build/execbox"), "run", "-b", "jail", "-c",
               "print(open('/etc/passwd').read().count(':x:'))"]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        outs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        assert all(o[0] == "3\n" for o in outs), outs
        assert ok(jail("print(1)")) == "1\n"

    def test_restage_keeps_the_etc_of_a_running_sandbox(self):
        # A run is using the staged /etc when another execbox re-stages it and exits; a third
        # one's start-up sweep of the dead one's leftovers must not empty the /etc the first
        # run still has mounted.
        marker = "/run/execbox/jail/.staged"
        if os.geteuid() != 0 or not os.path.exists(marker):
            raise SkipTest("needs root's /run/execbox stage")
        exe = os.environ.get("EXECBOX", "build/execbox")
        first = subprocess.Popen(
            [exe, "run", "-b", "jail", "-t", "30", "-c",
             "import time, os\nprint(os.path.exists('/etc/passwd'), flush=True)\n"
             "time.sleep(3)\nprint(open('/etc/passwd').read().count(':x:'))"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert first.stdout.readline() == "True\n"  # it runs, on the current stage
        os.unlink(marker)  # forget the stage: the next execbox builds and swaps in a new one
        assert ok(jail("print(1)")) == "1\n"  # re-stages, then exits: its old stage is a leftover
        force_sweep()
        assert ok(jail("print(2)")) == "2\n"  # its start-up sweeps leftovers of dead execboxes
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0 and out == "3\n", (first.returncode, out, err)

    def test_stale_leftovers_removed_at_start(self):
        # What an execbox killed mid-run leaves: a run cgroup with a process still in it, and
        # an unprivileged-mode workspace; both named after a pid that is now dead.
        dead = subprocess.Popen(["true"])
        dead.wait()
        pids_root = "/sys/fs/cgroup/pids"
        if not os.access(pids_root, os.W_OK):
            raise SkipTest("no writable v1 pids hierarchy here")
        cg = os.path.join(pids_root, f"execbox-{dead.pid}-0")
        other = os.path.join(pids_root, "not-execbox-test")
        os.mkdir(cg)
        os.mkdir(other)
        orphan = subprocess.Popen(["sleep", "60"])
        ws = os.path.join(tempfile.gettempdir(), f"execbox-ws-{dead.pid}-XyZ123")
        os.mkdir(ws, 0o700)  # as execbox makes them: ours, private
        os.chmod(ws, 0o700)
        open(os.path.join(ws, "f"), "w").close()
        try:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(orphan.pid))
            # Every leftover is in place before the sweep is due again: whichever execbox
            # starts next (ours, or a parallel test's) must sweep them all.
            force_sweep()
            ok(jail("print(1)"))
            assert orphan.wait(timeout=5) == -9, "the leftover's process was killed"
            assert not os.path.exists(cg), "the leftover cgroup was removed"
            assert not os.path.exists(ws), "the leftover workspace was removed"
            assert os.path.isdir(other), "a cgroup not named like ours was left alone"
        finally:
            orphan.kill()
            orphan.wait()
            for d in (cg, other):
                if os.path.exists(d):
                    os.rmdir(d)
            shutil.rmtree(ws, ignore_errors=True)

    def test_sweep_deletes_only_what_is_provably_ours(self):
        # In world-writable $TMPDIR a name proves nothing: another user's directory, a symlink
        # and a directory of ours with a mode we never make are all left alone, and nothing
        # is followed through the symlink.
        dead = subprocess.Popen(["true"])
        dead.wait()
        # A $TMPDIR of this test's own: older execbox builds running on this host at the same
        # time (other checkouts) would delete by name what this test plants.
        tmp = tempfile.mkdtemp(prefix="eb-sweeptmp-")
        os.chmod(tmp, 0o1777)
        env = dict(os.environ, TMPDIR=tmp)
        theirs = os.path.join(tmp, f"execbox-ws-{dead.pid}-theirs")
        link = os.path.join(tmp, f"execbox-ws-{dead.pid}-link")
        loose = os.path.join(tmp, f"execbox-ws-{dead.pid}-loose")
        canary = tempfile.mkdtemp(prefix="eb-canary-")
        try:
            open(os.path.join(canary, "keep"), "w").write("still here")
            os.mkdir(theirs, 0o700)
            open(os.path.join(theirs, "f"), "w").write("theirs")
            os.chown(os.path.join(theirs, "f"), 65534, 65534)
            os.chown(theirs, 65534, 65534)
            os.symlink(canary, link)
            os.mkdir(loose)
            os.chmod(loose, 0o777)
            force_sweep()
            ok(jail("print(1)", env=env))
            assert os.path.isfile(os.path.join(theirs, "f")), "another user's directory was deleted"
            assert os.path.islink(link), "the symlink was deleted"
            assert open(os.path.join(canary, "keep")).read() == "still here"
            assert os.path.isdir(loose), "a directory we never make was deleted"
        finally:
            if os.path.islink(link):
                os.unlink(link)
            for d in (theirs, loose, canary, tmp):
                shutil.rmtree(d, ignore_errors=True)

    def test_swapped_out_stages_are_bounded(self):
        # /etc stages of dead execboxes go at the next sweep once no sandbox holds them (they
        # were kept 25 h and added up: 44 copies after one test run); one a sandbox holds
        # (shared lock) stays.
        if os.geteuid() != 0 or not os.path.isdir("/run/execbox/jail"):
            raise SkipTest("needs root's /run/execbox stage")
        import fcntl
        dead = subprocess.Popen(["true"])
        dead.wait()
        free = f"/run/execbox/jail.{dead.pid}-FREE00"
        held = f"/run/execbox/jail.{dead.pid}-HELD00"
        # Each stage is made whole (and the held one locked) under a name no sweep reads, then
        # renamed into place: a parallel test's serve or mcp sweeps at its start, and must not
        # find one half made (CI: its sweep removed FREE00 between its mkdir and its etc's).
        fd = None
        for d in (free, held):
            part = f"/run/execbox/.eb-test-{os.path.basename(d)}"
            os.makedirs(os.path.join(part, "etc"))
            os.chmod(part, 0o755)
            if d == held:
                fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY)
                fcntl.flock(fd, fcntl.LOCK_SH)
            os.rename(part, d)
        try:
            force_sweep()
            ok(jail("print(1)"))
            assert not os.path.exists(free), "an unused stage of a dead execbox was kept"
            assert os.path.isdir(os.path.join(held, "etc")), "a stage in use was deleted"
            # Swept at most once per interval: a run within it does not sweep. An execbox of its
            # own TMPDIR has a sweep stamp of its own (the stamp is per cgroup base and TMPDIR),
            # so that a parallel test's execbox (serve and mcp sweep at start whatever the
            # interval) can neither make our sweep due nor be mistaken for ours: ours sweeps
            # once, then its stamp stays as it was through a second run.
            own = tempfile.mkdtemp(prefix="eb-sweep-")
            env = dict(os.environ, TMPDIR=own)
            try:
                before = set(glob.glob("/run/execbox/jail/.swept-*"))
                ok(jail("print(1)", env=env))
                mine = set(glob.glob("/run/execbox/jail/.swept-*")) - before
                assert len(mine) == 1, ("no sweep stamp of its own", mine)
                stamp = mine.pop()
                t = os.stat(stamp).st_mtime_ns
                time.sleep(0.05)
                ok(jail("print(1)", env=env))
                assert os.stat(stamp).st_mtime_ns == t, "swept again within the interval"
            finally:
                shutil.rmtree(own, ignore_errors=True)
                for st in set(glob.glob("/run/execbox/jail/.swept-*")) - before:
                    os.unlink(st)  # our TMPDIR's stamp: nobody else's
        finally:
            os.close(fd)
            shutil.rmtree(free, ignore_errors=True)
            shutil.rmtree(held, ignore_errors=True)

    def test_zz_teardown_leaves_nothing(self):
        ok(jail("print(1)"))
        r = jail("while True: pass", "-t", "0.3")
        assert r["timed_out"]
        # Ours, by the pid in the name: a parallel test may SIGKILL an execbox of its own, whose
        # cgroups then wait for the next start-up sweep (test_stale_leftovers_removed_at_start).
        left = [p for p in execbox_cgroups() if cgroup_owner(p) in STARTED]
        assert not left, left
        # Of ours, only the documented, bounded pin of the prepared mount namespace may stay
        # mounted on the host (docs/jail.md); any other mount of ours is a leak.
        pins, rest = split_pins(open("/proc/self/mountinfo").read().splitlines())
        check_pins(pins)
        ours = [l for l in rest if "/run/execbox" in l or "execbox-ws" in l]
        assert not ours, ours
        # execbox-ws-PID-*: only unprivileged runs make these; a parallel one may be in flight.
        ws = [p for p in glob.glob(os.path.join(tempfile.gettempdir(), "execbox-ws-*"))
              if not owner_alive(p.replace("execbox-ws-", "execbox-"))]
        assert not ws, ws


if __name__ == "__main__":
    if os.geteuid() != 0 and not os.path.exists("/proc/self/ns/user"):
        print("skip: no user namespaces")
        sys.exit(SKIP)
    chk = run(["check", "-b", "jail"])
    if "status: ready" not in chk.stdout:
        # A wall the kernel or this host's setup lacks (the check says which and why).
        print("skip: the jail is not complete here:\n" + chk.stdout)
        sys.exit(SKIP)
    JailWalls().main()
