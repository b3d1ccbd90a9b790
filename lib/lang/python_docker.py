# SPDX-License-Identifier: MIT
# python_docker.py - the docker backend's bootstrap, the container's pid 1, run as
# `python3 -I -S -c BOOT INTERPRETER ARGS...` (lib/backends/docker.c; embedded into the library
# at build time by lib/backends/docker_boot.c). It:
#  - rebuilds the program (and stdin) from the Env chunks and drops them from the environment;
#  - makes itself non-dumpable, so the guest (same uid) cannot read its memory or environ and
#    so cannot learn the nonce;
#  - writes the program to a private directory on the /tmp tmpfs; forks the guest, which
#    offers itself to the OOM killer first (oom_score_adj 1000) and execs the interpreter;
#    pid 1 ignores SIGINT (the only signal it has a handler for, so the only one the guest
#    could send it from inside the namespace);
#  - when the guest ends, kills every other process of the container (pid 1 of its pid
#    namespace: kill(-1) reaches exactly those), reaps them, and reads the memory cgroup's
#    oom_kill counter again: an OOM kill is proven when the guest died of SIGKILL and the
#    counter went up;
#  - lists the regular files left in /workspace (a tmpfs that dies with the container), as
#    lib/ws/workspace.c does (no symlinks followed, no mounts crossed, at most 256 files
#    (EB_FILES_MAX) and 8 levels down (EB_FILES_DEPTH): tests/unit/test_docker.c checks that
#    these stay lib/base/limits.h's);
#  - writes one line per file, then one status line (exit code, signal, oom, CPU us, max RSS
#    KiB, files truncated), each marked with the nonce, to stderr; the log demultiplexer
#    takes them out of the output. Then it exits with the guest's status.
# No shell anywhere. Only the standard library: the image's python3 is all it may rely on.
import os,sys,base64,signal,resource
e=os.environ
nonce=e.pop('EXECBOX_NONCE')
try:
    import ctypes
    ctypes.CDLL(None).prctl(4,0,0,0,0)
    safe=True
except Exception:
    safe=False
def take(k):
    n=int(e.pop(k+'_N','0'))
    return b''.join(base64.b64decode(e.pop('%s_%d'%(k,i))) for i in range(n))
d='/tmp/.execbox'
os.mkdir(d,0o700)
p=d+'/'+e.pop('EXECBOX_FILE')
with open(os.open(p,os.O_WRONLY|os.O_CREAT|os.O_EXCL,0o400),'wb') as f:
    f.write(take('EXECBOX_CODE'))
stdin=take('EXECBOX_STDIN') if 'EXECBOX_STDIN_N' in e else None
if stdin is not None:
    s=d+'/stdin'
    with open(os.open(s,os.O_WRONLY|os.O_CREAT|os.O_EXCL,0o400),'wb') as f:
        f.write(stdin)
def ooms():
    for q in ('/sys/fs/cgroup/memory/memory.oom_control','/sys/fs/cgroup/memory.events'):
        try:
            for l in open(q):
                if l.startswith('oom_kill '):
                    return int(l.split()[1])
        except OSError:
            pass
    return -1
o0=ooms()
a=sys.argv[1:]+[p]
pid=os.fork()
if pid==0:
    try:
        if stdin is not None:
            i=os.open(s,os.O_RDONLY)
            os.dup2(i,0)
            os.close(i)
        with open('/proc/self/oom_score_adj','w') as f:
            f.write('1000')
    except OSError:
        pass
    for g in (signal.SIGPIPE,signal.SIGXFSZ,signal.SIGINT):
        signal.signal(g,signal.SIG_DFL)
    try:
        os.execv(a[0],a)
    except OSError as x:
        os.write(2,('execbox: cannot execute interpreter %r in the image: %s\n'%(a[0],x.strerror)).encode())
    os._exit(127)
signal.signal(signal.SIGINT,signal.SIG_IGN)
while True:
    try:
        w,st=os.waitpid(-1,0)
    except ChildProcessError:
        st=0
        break
    except InterruptedError:
        continue
    if w==pid:
        break
while True:
    try:
        os.kill(-1,signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(-1,0)
    except ChildProcessError:
        break
    except OSError:
        pass
ru=resource.getrusage(resource.RUSAGE_CHILDREN)
if os.WIFSIGNALED(st):
    sig=os.WTERMSIG(st)
    code=128+sig
else:
    sig=0
    code=os.WEXITSTATUS(st)
o1=ooms()
oom=int(sig==9 and o0>=0 and o1>o0)
import stat
fl=[]
ft=[0]
def walk(dp,rel,dev,depth):
    try:
        names=sorted(os.listdir(dp))
    except OSError:
        return
    for n in names:
        q=dp+'/'+n
        r=rel+n
        try:
            st=os.lstat(q)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            if len(fl)>=256:
                ft[0]=1
                return
            b=os.fsencode(r)
            if len(b)<=1024:
                fl.append((b,st.st_size))
        elif stat.S_ISDIR(st.st_mode) and depth<8 and st.st_dev==dev:
            walk(q,r+'/',dev,depth+1)
try:
    walk('/workspace','',os.lstat('/workspace').st_dev,0)
except OSError:
    pass
if safe:
    for b,z in fl:
        os.write(2,('\x1eEXECBOX %s F %d %s\n'%(nonce,z,b.hex())).encode())
    os.write(2,('\x1eEXECBOX %s S %d %d %d %d %d %d\n'%(nonce,code,sig,oom,int((ru.ru_utime+ru.ru_stime)*1e6),ru.ru_maxrss,ft[0])).encode())
sys.exit(code)
