/* SPDX-License-Identifier: MIT */
/* lang.c - languages and the guest environment. */
#include "lang.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execbox/execbox.h"
#include "util.h"

/* Python's warm start. Everything before the read on fd 3 happens ahead of the run (imports,
 * and one throwaway compile and file read so the first real ones are not cold); after it, the
 * user's file runs as __main__ in a fresh module, with sys.argv, sys.path[0], stdin, globals
 * and tracebacks as a cold `python3 -B FILE` has them. Each warm interpreter is its own process
 * started from nothing: its hash seed and random state are its own.
 *
 * Shutdown is CPython's own sequence up to the point where only the interpreter's teardown of
 * every imported module is left (2 ms bare, 50 ms with pandas here): the exit status as
 * SystemExit defines it, non-daemon threads joined, atexit callbacks, __main__'s globals
 * cleared (so the user's objects are finalised and unclosed files flushed, as at a normal exit),
 * a collection, stdio flushed; then os._exit. What is skipped is the teardown of the library
 * modules themselves. Before waiting, everything the preload created is moved to the
 * collector's permanent generation (gc.freeze), so that collections during and after the run
 * scan only the run's own objects. */
static const char python_bootstrap[] =
    "import sys, os\n"
    "def _execbox_warm():\n"
    "    path, stdin_path, preload = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "    for m in filter(None, preload.split(',')):\n"
    "        try:\n"
    "            __import__(m)\n"
    "        except Exception:\n"
    "            pass\n"
    "    import types, builtins, importlib.machinery, atexit, gc\n"
    "    exec(compile('_x = [i for i in range(2)]\\nprint(end=\"\")\\n', path, 'exec'), {})\n"
    "    with open(sys.executable, 'rb') as f:\n"
    "        f.read(1)\n"
    "    gc.collect()\n"
    "    gc.freeze()\n"
    "    go = b''\n"
    "    while True:\n"
    "        try:\n"
    "            go = os.read(3, 1)\n"
    "            break\n"
    "        except InterruptedError:\n"
    "            continue\n"
    "    os.close(3)\n"
    "    if go != b'g':\n"
    "        os._exit(0)\n"
    "    fd = os.open(stdin_path, os.O_RDONLY)\n"
    "    os.dup2(fd, 0)\n"
    "    os.close(fd)\n"
    "    with open(path, 'rb') as f:\n"
    "        src = f.read()\n"
    "    mod = types.ModuleType('__main__')\n"
    "    mod.__file__ = path\n"
    "    mod.__builtins__ = builtins\n"
    "    mod.__cached__ = None\n"
    "    mod.__annotations__ = {}\n"
    "    mod.__loader__ = importlib.machinery.SourceFileLoader('__main__', path)\n"
    "    sys.modules['__main__'] = mod\n"
    "    sys.argv[:] = [path]\n"
    "    sys.path[0] = os.path.dirname(path)\n"
    "    status = 0\n"
    "    try:\n"
    "        try:\n"
    "            code = compile(src, path, 'exec')\n"
    "        except SyntaxError as e:\n"
    "            sys.excepthook(type(e), e.with_traceback(None), None)\n"
    "            status = 1\n"
    "        else:\n"
    "            del src, f, fd\n"
    "            exec(code, mod.__dict__)\n"
    "    except SystemExit as e:\n"
    "        status = _execbox_exit_status(e)\n"
    "    except BaseException as e:\n"
    "        tb = e.__traceback__.tb_next if e.__traceback__ else None\n"
    "        sys.excepthook(type(e), e.with_traceback(tb), tb)\n"
    "        status = 1\n"
    "    _execbox_shutdown(status, mod, atexit, gc)\n"
    "def _execbox_exit_status(e):\n"
    "    c = e.code\n"
    "    if c is None:\n"
    "        return 0\n"
    "    if isinstance(c, int):\n"
    "        return c & 0xff\n"
    "    try:\n"
    "        print(c, file=sys.stderr)\n"
    "    except Exception:\n"
    "        pass\n"
    "    return 1\n"
    "def _execbox_shutdown(status, mod, atexit, gc):\n"
    "    try:\n"
    "        t = sys.modules.get('threading')\n"
    "        if t is not None:\n"
    "            t._shutdown()\n"
    "        atexit._run_exitfuncs()\n"
    "        mod.__dict__.clear()\n"
    "        gc.collect()\n"
    "    except SystemExit as e:\n"
    "        status = _execbox_exit_status(e)\n"
    "    except BaseException:\n"
    "        pass\n"
    "    for s in (sys.stdout, sys.stderr):\n"
    "        try:\n"
    "            s.flush()\n"
    "        except Exception:\n"
    "            status = status or 120\n"
    "    os._exit(status)\n"
    "_execbox_warm()\n";

static const struct eb_language languages[] = {
    /* -B: never write .pyc files into a read-only or shared tree. */
    {"python", "/usr/bin/python3", {"-B", NULL}, "main.py", RLIMIT_AS, python_bootstrap},
    {"javascript", "/usr/bin/node", {NULL}, "main.js", RLIMIT_DATA, NULL},
    /* --noprofile --norc: no host start-up files run before the code. */
    {"bash", "/bin/bash", {"--noprofile", "--norc", NULL}, "main.sh", RLIMIT_AS, NULL},
};

static const char *const language_names[] = {"python", "javascript", "bash", NULL};

const char *const *execbox_languages(void)
{
    return language_names;
}

const struct eb_language *eb_language_find(const char *name)
{
    if (!name || !*name)
        name = "python";
    if (strcmp(name, "py") == 0 || strcmp(name, "python3") == 0)
        name = "python";
    else if (strcmp(name, "js") == 0 || strcmp(name, "node") == 0)
        name = "javascript";
    else if (strcmp(name, "sh") == 0)
        name = "bash";
    for (size_t i = 0; i < ARRAY_SIZE(languages); i++)
        if (strcmp(languages[i].name, name) == 0)
            return &languages[i];
    return NULL;
}

const char *execbox_language_name(const char *name)
{
    const struct eb_language *l = eb_language_find(name);
    return l ? l->name : NULL;
}

int eb_env_add(struct eb_env *e, const char *name, const char *value)
{
    if (e->n >= EB_ENV_MAX)
        return -E2BIG;
    size_t room = sizeof(e->storage) - e->used;
    int n = snprintf(e->storage + e->used, room, "%s=%s", name, value);
    if (n < 0 || (size_t)n >= room)
        return -E2BIG;
    e->envp[e->n++] = e->storage + e->used;
    e->envp[e->n] = NULL;
    e->used += (size_t)n + 1;
    return 0;
}

int eb_env_build(struct eb_env *e, const char *home, const char *tmpdir, double cpus)
{
    memset(e, 0, sizeof(*e));
    char threads[16], mpl[EXECBOX_PATH_MAX];
    snprintf(threads, sizeof(threads), "%d", (int)ceil(cpus > 0 ? cpus : 1));
    snprintf(mpl, sizeof(mpl), "%s/.matplotlib", tmpdir);
    const char *kv[][2] = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", home},
        {"TMPDIR", tmpdir},
        {"LANG", "C.UTF-8"},
        {"LC_ALL", "C.UTF-8"},
        {"PYTHONUNBUFFERED", "1"},
        {"PYTHONDONTWRITEBYTECODE", "1"},
        {"MPLCONFIGDIR", mpl},
        {"MPLBACKEND", "Agg"},
        {"OMP_NUM_THREADS", threads},
        {"OPENBLAS_NUM_THREADS", threads},
        {"MKL_NUM_THREADS", threads},
        {"NUMEXPR_NUM_THREADS", threads},
    };
    for (size_t i = 0; i < ARRAY_SIZE(kv); i++) {
        int r = eb_env_add(e, kv[i][0], kv[i][1]);
        if (r < 0)
            return r;
    }
    static const char *const passthrough[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
    for (size_t i = 0; i < ARRAY_SIZE(passthrough); i++) {
        const char *v = secure_getenv(passthrough[i]);
        if (v && strlen(v) < 64) {
            int r = eb_env_add(e, passthrough[i], v);
            if (r < 0)
                return r;
        }
    }
    return 0;
}
