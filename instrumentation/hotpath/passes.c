/* The flusher's passes, handed the GIL by the traced threads (instrumentation/hub.py).
 *
 * Each pass of the ioadvisor-flush thread needs the GIL from a program in the middle of its calls, and needs it
 * again after each of its own releases (numpy on a batch's columns, pyarrow, file writes). CPython 3.11 gives a
 * waiting thread the GIL only when it wins a race: h5py releases the GIL around its HDF5 calls, each release wakes
 * the waiter, the program takes the GIL back first, and the waiter sleeps again with a new 5 ms switch interval
 * that never runs out. The flusher on the other core woke thousands of times a pass and paid 10-50 ms of CPU a
 * second for writing that costs 2-3 ms when it runs alone (benchmarks.speed.tracing_overhead --per-call-only,
 * "writing"; a flusher pinned to the program's core does not race).
 *
 * So a pass is announced before the flusher takes the GIL (flusher_wait), and a traced call that finds a pass
 * announced waits for its end with the GIL released (hotpath_yield): the flusher then runs alone, as it would
 * between the program's time slices on one core. A call waits at most YIELD_NS for a pass, and once per pass:
 * a pass stuck on a slow disk delays the program once, not at every call.
 */
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#define YIELD_NS 20000000L /* longest a traced call waits for a pass (a pass takes 1-3 ms: writing one batch) */

__attribute__((visibility("hidden"))) int hotpath_pass_on; /* a pass is announced or running (atomic) */
static unsigned long pass_seq;          /* passes announced (atomic) */
static __thread unsigned long yielded;  /* the pass this thread last waited for */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER; /* kicks for the flusher; pass ends for the traced threads */
static int kicked;                      /* under mu: the flusher is asked for a pass now */

static struct timespec deadline(long ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec += ns % 1000000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* A traced call found a pass announced: wait for its end without the GIL (once per pass, at most YIELD_NS). */
void hotpath_yield(void) {
    unsigned long seq = __atomic_load_n(&pass_seq, __ATOMIC_ACQUIRE);
    if (yielded == seq) return;
    yielded = seq;
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts = deadline(YIELD_NS);
    pthread_mutex_lock(&mu);
    while (__atomic_load_n(&hotpath_pass_on, __ATOMIC_ACQUIRE))
        if (pthread_cond_timedwait(&cv, &mu, &ts) == ETIMEDOUT) break;
    pthread_mutex_unlock(&mu);
    Py_END_ALLOW_THREADS
}

/* flusher_wait(seconds): sleep without the GIL until kick() or the timeout, then announce a pass and take the GIL. */
PyObject *hotpath_flusher_wait(PyObject *m, PyObject *arg) {
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) return NULL;
    long ns = seconds <= 0 ? 0 : seconds > 3600 ? 3600L * 1000000000L : (long)(seconds * 1e9);
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts = deadline(ns);
    pthread_mutex_lock(&mu);
    while (!kicked)
        if (pthread_cond_timedwait(&cv, &mu, &ts) == ETIMEDOUT) break;
    kicked = 0;
    yielded = __atomic_add_fetch(&pass_seq, 1, __ATOMIC_ACQ_REL); /* the flusher never waits for its own pass */
    __atomic_store_n(&hotpath_pass_on, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&mu);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* pass_done(): the pass ended; the traced threads waiting for it go on. */
PyObject *hotpath_pass_done(PyObject *m, PyObject *unused) {
    pthread_mutex_lock(&mu);
    __atomic_store_n(&hotpath_pass_on, 0, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    Py_RETURN_NONE;
}

/* Ask the flusher for a pass now (a recorder filling up; the last tracer's exit). */
void hotpath_kick_flusher(void) {
    pthread_mutex_lock(&mu);
    kicked = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* kick(): hotpath_kick_flusher from Python. */
PyObject *hotpath_kick(PyObject *m, PyObject *unused) {
    hotpath_kick_flusher();
    Py_RETURN_NONE;
}

/* A forked child has no flusher yet and may have copied the lock held: start afresh. */
static void after_fork_in_child(void) {
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv, NULL);
    kicked = 0;
    hotpath_pass_on = 0;
}

int hotpath_passes_init(void) { return pthread_atfork(NULL, NULL, after_fork_in_child); }
