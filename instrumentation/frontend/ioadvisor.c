/* The `ioadvisor` command's native front end: `ioadvisor run [-o TRACE] [--force] [--] PROGRAM ...` of a serial
 * program that is not Python starts the program before any interpreter does, then becomes the Python launcher
 * (exec, same process: the program stays its child), which goes on as advisor/entry.py's run_native after its
 * spawn. Every other command line, and every case this file does not decide alone, execs the Python entry point
 * (the `ioadvisor-python` script beside this one) with the command line unchanged, nothing done.
 *
 * Why: a traced native run waited about 12 ms for the interpreter's start (`site` included) before its program
 * started (benchmarks/speed/native_timeline.py); the 20,000-box C program's whole-process overhead target (10%,
 * benchmarks/speed/tracing_overhead.py --fixed-only) is about 19 ms in all. The interpreter now starts beside
 * the program.
 *
 * What it does before the spawn is instrumentation/nativestart.py's NativeStart, step for step (the same checks,
 * in the same order, falling back where that returns None): the names and texts it must agree on come from the
 * Python modules at build time (front_config.h, written by setup.py), and tests/instrumentation/test_frontend.py
 * compares the two paths' traces. The state is handed over in FC_STARTED_VAR (nativestart.NativeStart.resumed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "front_config.h"

extern char **environ;

static char script[PATH_MAX]; /* the Python entry point: everything not decided here goes there */
static char **args;
static int nargs;

/* The Python entry point with the command line unchanged (sys.argv[0] told through FC_ARGV0_VAR). */
static void python_entry(const char *started) {
    char **argv = calloc((size_t)nargs + 1, sizeof(char *));
    if (argv == NULL) {
        perror("ioadvisor");
        _exit(127);
    }
    argv[0] = script;
    for (int i = 1; i < nargs; i++) argv[i] = args[i];
    if (started != NULL) setenv(FC_STARTED_VAR, started, 1);
    execv(script, argv);
    fprintf(stderr, "ioadvisor: cannot start %s: %s\n", script, strerror(errno));
    _exit(127);
}

static int exists(const char *path) {  /* os.path.exists: a broken link does not */
    struct stat st;
    return stat(path, &st) == 0;
}

static int lexists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *join(const char *a, const char *b) {
    char *out = NULL;
    if (b[0] == '/') return strdup(b);
    size_t n = strlen(a);
    if (asprintf(&out, "%s%s%s", a, (n == 0 || a[n - 1] == '/') ? "" : "/", b) < 0) return NULL;
    return out;
}

static void hex(char *out, size_t nbytes) {
    unsigned char buf[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, nbytes) != (ssize_t)nbytes) python_entry(NULL);
    close(fd);
    for (size_t i = 0; i < nbytes; i++) sprintf(out + 2 * i, "%02x", buf[i]);
}

/* The interpreter named by the entry point's "#!" line, and its prefix if it is a virtual environment's. */
static int python_prefix(char *prefix) {
    char head[PATH_MAX + 3];
    int fd = open(script, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n < 3 || head[0] != '#' || head[1] != '!') return 0;
    head[n] = 0;
    char *end = strchr(head, '\n');
    if (end == NULL) return 0;
    *end = 0;
    char *python = head + 2;
    if (python[0] != '/' || strchr(python, ' ') != NULL) return 0;
    char *slash = strrchr(python, '/');
    *slash = 0;  /* .../bin */
    slash = strrchr(python, '/');
    if (slash == NULL) return 0;
    *slash = 0;  /* the prefix */
    snprintf(prefix, PATH_MAX, "%s", python);
    char cfg[PATH_MAX];
    snprintf(cfg, sizeof cfg, "%s/pyvenv.cfg", prefix);
    return exists(cfg);  /* else sysconfig says where site-packages is: Python decides */
}

/* ``nativestart.which``. */
static char *which(const char *name) {
    const char *path = getenv("PATH");
    if (path == NULL) path = "/bin:/usr/bin";
    char *copy = strdup(path), *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); ; dir = strtok_r(NULL, ":", &save)) {
        if (dir == NULL) break;
        char *full = join(dir, name);
        if (full != NULL && exists(full) && access(full, F_OK | X_OK) == 0 && !is_dir(full)) return full;
        free(full);
    }
    return NULL;
}

/* ``nativestart.is_python_file``: 1 for a Python script (or one not readable here). */
static int is_python_file(const char *path) {
    char head[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 0) return 1;
    if (n >= 4 && memcmp(head, "\177ELF", 4) == 0) return 0;
    if (n < 2 || head[0] != '#' || head[1] != '!') return 1;
    char *nl = memchr(head, '\n', (size_t)n);
    size_t len = nl ? (size_t)(nl - head) : (size_t)n;
    return memmem(head, len, "python", 6) != NULL;
}

/* ``nativestart.links_hdf5_in``. */
static int links_hdf5_in(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (data != MAP_FAILED) {
            found = memmem(data, (size_t)st.st_size, FC_HDF5_MARK, sizeof FC_HDF5_MARK - 1) != NULL;
            munmap(data, (size_t)st.st_size);
        }
    }
    close(fd);
    return found;
}

static int digits(const char *s, size_t n) {
    if (n < 6) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_pending_name(const char *name) {
    return strcmp(name, FC_PENDING) == 0 || strcmp(name, FC_SEALING) == 0 ||
           strncmp(name, FC_CONVERTING, strlen(FC_CONVERTING)) == 0;
}

/* ``nativestart.is_trace_file``. */
static int is_trace_file(const char *name) {
    if (strcmp(name, FC_RECORDS_FILE) == 0 || ends_with(name, ".parquet.tmp") || ends_with(name, ".npy.tmp") ||
        is_pending_name(name))
        return 1;
    const char *dot = strrchr(name, '.');
    if (dot == NULL) return 0;
    size_t stem = (size_t)(dot - name);
    if (strncmp(name, "part-", 5) == 0 && (strcmp(dot, ".parquet") == 0 || strcmp(dot, ".npy") == 0))
        return digits(name + 5, stem - 5);
    if (strncmp(name, "parts-", 6) == 0 && strcmp(dot, ".parquet") == 0) {
        const char *dash = memchr(name + 6, '-', stem - 6);
        return dash != NULL && digits(name + 6, (size_t)(dash - name - 6)) &&
               digits(dash + 1, (size_t)(dot - dash - 1));
    }
    return 0;
}

static int remove_tree(const char *path) {
    DIR *dir = opendir(path);
    if (dir == NULL) return unlink(path);
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *sub = join(path, e->d_name);
        struct stat st;
        if (sub == NULL || lstat(sub, &st) != 0) rc = -1;
        else rc |= S_ISDIR(st.st_mode) ? remove_tree(sub) : unlink(sub);
        free(sub);
    }
    closedir(dir);
    return rc | rmdir(path);
}

static int makedirs(const char *path) {
    char *copy = strdup(path);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(copy, 0777) != 0 && errno != EEXIST) return free(copy), -1;
        *p = '/';
    }
    free(copy);
    return mkdir(path, 0777);
}

/* ``NativeStart.clear_trace_dir``: 0 where Python must decide, nothing touched. */
static int clear_trace_dir(const char *live) {
    struct stat st;
    if (lstat(live, &st) != 0) return makedirs(live) == 0;
    if (!S_ISDIR(st.st_mode)) return 0;
    DIR *dir = opendir(live);
    if (dir == NULL) return 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && !is_trace_file(e->d_name))
            return closedir(dir), 0;
    rewinddir(dir);
    int ok = 1;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *sub = join(live, e->d_name);
        ok &= sub != NULL && (is_pending_name(e->d_name) ? remove_tree(sub) : unlink(sub)) == 0;
        free(sub);
    }
    closedir(dir);
    return ok;
}

static char hook_why[2 * PATH_MAX];

/* ``startup.ensure_startup_hook``: 1 if held; else hook_why says why not. */
static int ensure_startup_hook(const char *site) {
    char holders[PATH_MAX], target[PATH_MAX], me[PATH_MAX], tmp[PATH_MAX];
    struct utsname un;
    uname(&un);
    snprintf(holders, sizeof holders, "%s/%s", site, FC_HOLDERS);
    snprintf(target, sizeof target, "%s/%s", site, FC_PTH_NAME);
    snprintf(me, sizeof me, "%s/%s-%d", holders, un.nodename, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s/.%s.%d", site, FC_PTH_NAME, (int)getpid());
    int lock = -1, fd;
    if ((mkdir(holders, 0777) != 0 && errno != EEXIST) || (lock = open(holders, O_RDONLY | O_CLOEXEC)) < 0 ||
        flock(lock, LOCK_EX) != 0 || (fd = open(me, O_WRONLY | O_CREAT | O_CLOEXEC, 0666)) < 0)
        goto failed;
    close(fd);
    static const char line[] = FC_PTH_LINE;
    char have[sizeof line + 1];
    ssize_t n = -1;
    if ((fd = open(target, O_RDONLY | O_CLOEXEC)) >= 0) {
        n = read(fd, have, sizeof have);
        close(fd);
    }
    if (n != (ssize_t)(sizeof line - 1) || memcmp(have, line, sizeof line - 1) != 0) {
        if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) goto failed;
        if (write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) {
            close(fd);
            goto failed;
        }
        if (close(fd) != 0 || rename(tmp, target) != 0) goto failed;
    }
    close(lock);
    return 1;
failed:
    snprintf(hook_why, sizeof hook_why, "cannot write the start-up hook %s (%s)", target, strerror(errno));
    if (lock >= 0) close(lock);
    return 0;
}

static void release_hold(const char *site) {
    char me[PATH_MAX];
    struct utsname un;
    uname(&un);
    snprintf(me, sizeof me, "%s/%s/%s-%d", site, FC_HOLDERS, un.nodename, (int)getpid());
    unlink(me);  /* the .pth file is a no-op without the variable: the next holder's release removes it */
}

/* repr(float) would give the shortest digits; %.17g reads back as the same double (json, float()). */
static void fmt_double(char *out, size_t n, double v) { snprintf(out, n, "%.17g", v); }

static int launched_by_mpi(void) {
    static const char *vars[] = FC_MPI_VARS;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL) return 1;
    return 0;
}

/* ``preload.child_environment``: LD_PRELOAD with the interposer first (once), the rest kept. */
static char *ld_preload(const char *lib) {
    const char *old = getenv("LD_PRELOAD");
    size_t size = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *out = malloc(size), *copy = strdup(old ? old : ""), *save = NULL;
    strcpy(out, lib);
    for (char *p = strtok_r(copy, ": ", &save); p != NULL; p = strtok_r(NULL, ": ", &save)) {
        if (strcmp(p, lib) == 0) continue;
        strcat(out, " ");
        strcat(out, p);
    }
    free(copy);
    return out;
}

/* ``advisor.entry._parse``: the index of PROGRAM in args, or 0. */
static int parse(const char **output, int *force) {
    if (nargs < 2 || strcmp(args[1], "run") != 0) return 0;
    *output = FC_DEFAULT_TRACE;
    *force = 0;
    int i = 2;
    for (; i < nargs; i++) {
        const char *arg = args[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "--force") == 0) *force = 1;
        else if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) && i + 1 < nargs && args[i + 1][0] &&
                 args[i + 1][0] != '-')
            *output = args[++i];
        else if (strncmp(arg, "--output=", 9) == 0 && arg[9]) *output = arg + 9;
        else if (arg[0] == '-') return 0;
        else break;
    }
    return i < nargs ? i : 0;
}

static int has_separator(const char *s) { return strchr(s, '\x1f') != NULL; }

int main(int argc, char **argv) {
    args = argv;
    nargs = argc;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "ioadvisor: cannot find its own file (/proc/self/exe)\n");
        return 127;
    }
    self[n] = 0;
    *strrchr(self, '/') = 0;
    snprintf(script, sizeof script, "%s/%s", self, FC_PYTHON_SCRIPT);
    const char *argv0 = argv[0];
    if (strchr(argv0, '/') == NULL) {
        char *found = which(argv0);  /* as the kernel names a script found on PATH: its path */
        if (found != NULL) argv0 = found;
    }
    setenv(FC_ARGV0_VAR, argv0, 1);

    const char *output;
    int force, first = parse(&output, &force);
    char prefix[PATH_MAX];
    if (first == 0 || getenv(FC_STARTED_VAR) != NULL || launched_by_mpi() || !python_prefix(prefix))
        python_entry(NULL);
    if (strlen(prefix) > PATH_MAX / 2) python_entry(NULL);  /* no path below may be cut short */
    char site[PATH_MAX], lib[PATH_MAX];
    snprintf(site, sizeof site, "%s/lib/python%s/site-packages", prefix, FC_PY_VERSION);
    snprintf(lib, sizeof lib, "%s/%s", FC_INPLACE_DIR[0] ? FC_INPLACE_DIR : site, FC_LIB_FILE);
    if (!FC_INPLACE_DIR[0]) snprintf(lib, sizeof lib, "%s/instrumentation/%s", site, FC_LIB_FILE);
    if (!exists(lib) || !is_dir(site)) python_entry(NULL);

    const char *target = argv[first];
    const char *name = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
    if (strncmp(name, "python", 6) == 0 && strspn(name + 6, "0123456789.") == strlen(name + 6)) python_entry(NULL);
    char *path = exists(target) ? strdup(target) : strchr(target, '/') ? NULL : which(target);
    if (path == NULL || is_python_file(path) || links_hdf5_in(path)) python_entry(NULL);

    /* NativeStart(os.path.join(os.getcwd(), output), force) */
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) python_entry(NULL);
    char *trace = join(cwd, output), *live = NULL;
    if (trace == NULL || has_separator(trace) || strlen(trace) > PATH_MAX / 2) python_entry(NULL);
    if (ends_with(trace, ".jsonl")) {
        if (asprintf(&live, "%s.live", trace) < 0) python_entry(NULL);
    } else {
        live = trace;
    }
    if (!force && (lexists(trace) || lexists(live))) python_entry(NULL);  /* the CLI says so */
    struct timespec wall, mono;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);  /* time.perf_counter's clock */
    char t_unix[40], origin[40];
    fmt_double(t_unix, sizeof t_unix, (double)wall.tv_sec + wall.tv_nsec * 1e-9);
    fmt_double(origin, sizeof origin, (double)mono.tv_sec + mono.tv_nsec * 1e-9);
    if (!clear_trace_dir(live)) python_entry(NULL);

    /* NativeStart.open */
    int holds = ensure_startup_hook(site);
    char rnd[16], parts[PATH_MAX], logs[PATH_MAX], run_tmp[PATH_MAX], run_file[PATH_MAX];
    hex(rnd, 4);
    snprintf(parts, sizeof parts, "%s.parts-%s", trace, rnd);
    const char *tmpdir = getenv("TMPDIR");
    hex(rnd, 6);
    snprintf(logs, sizeof logs, "%s/ioadvisor-h5-%s", tmpdir && tmpdir[0] ? tmpdir : "/tmp", rnd);
    snprintf(run_tmp, sizeof run_tmp, "%s/.%s", parts, FC_RUN_FILE);
    snprintf(run_file, sizeof run_file, "%s/%s", parts, FC_RUN_FILE);
    FILE *fh = NULL;
    int opened = mkdir(parts, 0777) == 0 && (fh = fopen(run_tmp, "we")) != NULL &&
                 fprintf(fh, "{\"t_origin_unix\": %s, \"origin\": %s, \"rank\": 0, \"size\": 1}", t_unix, origin) > 0;
    opened = (fh == NULL || fclose(fh) == 0) && opened && rename(run_tmp, run_file) == 0 && mkdir(logs, 0700) == 0 &&
             !has_separator(hook_why);
    char *preload = ld_preload(lib);
    char **env = NULL;
    pid_t pid = -1;
    if (opened) {
        size_t count = 0;
        while (environ[count]) count++;
        env = calloc(count + 4, sizeof(char *));
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            const char *e = environ[i];
            if (strncmp(e, "LD_PRELOAD=", 11) == 0 || strncmp(e, FC_FOLLOW_VAR "=", sizeof FC_FOLLOW_VAR) == 0 ||
                strncmp(e, FC_LOG_DIR_VAR "=", sizeof FC_LOG_DIR_VAR) == 0 ||
                strncmp(e, FC_ARGV0_VAR "=", sizeof FC_ARGV0_VAR) == 0)
                continue;
            env[k++] = (char *)e;
        }
        if (asprintf(&env[k++], "%s=%s", FC_FOLLOW_VAR, parts) < 0 ||
            asprintf(&env[k++], "LD_PRELOAD=%s", preload) < 0 || asprintf(&env[k++], "%s=%s", FC_LOG_DIR_VAR, logs) < 0)
            opened = 0;
    }
    if (opened) {
        posix_spawnattr_t attr;
        sigset_t reset;
        sigemptyset(&reset);
        sigaddset(&reset, SIGPIPE);
        sigaddset(&reset, SIGXFSZ);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigdefault(&attr, &reset);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
        char **prog = argv + first;
        char *saved = prog[0];
        prog[0] = path;
        if (posix_spawn(&pid, path, NULL, &attr, prog, env) != 0) pid = -1;
        prog[0] = saved;
        posix_spawnattr_destroy(&attr);
    }
    if (pid < 0) {  /* NativeStart.abandon: the CLI starts it again and reports what fails */
        unlink(run_file);
        unlink(run_tmp);
        rmdir(parts);
        rmdir(live);
        rmdir(logs);
        if (holds) release_hold(site);
        python_entry(NULL);
    }
    /* the interpreter's start and the launcher's imports, beside the program: below it while it runs (this
     * process's nice value, as the watcher's in instrumentation/launch.py); the launcher goes back to the
     * priority it had when the program ends, where the system allows it (NativeStart.resumed) */
    errno = 0;
    int nice_before = getpriority(PRIO_PROCESS, 0);
    if (errno != 0) nice_before = FC_LAUNCH_NICE;
    else if (nice_before < FC_LAUNCH_NICE) setpriority(PRIO_PROCESS, 0, FC_LAUNCH_NICE);
    char *state = NULL;
    if (asprintf(&state, "%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d", (int)pid, trace, live, parts,
                 logs, t_unix, origin, holds ? "1" : "0", holds ? "" : hook_why, nice_before) < 0) {
        perror("ioadvisor");
        kill(pid, SIGKILL);
        return 127;
    }
    python_entry(state);
    return 127;
}
