/* Runs folded in C: columns.compact_runs over the records the h5py hooks made in one batch (heldtakes.py).
 *
 * The tracer's flusher used to decode every take of the C hooks' records into columns, join a batch's takes and
 * fold its runs with numpy: about 20 ms of its CPU per second of a loop of 26-us reads, with the GIL held for
 * most of it (benchmarks/speed/tracing_overhead.py --per-call-only: "writing at the tracer's cadence"). Here the
 * batch's records are walked once, in place, without the GIL, and only the rows that remain are handed back.
 *
 * fold(chunks, width) -> (heads, vals, rep, dt, t_step, step), each bytes:
 *   chunks: a sequence of (heads, vals, tids, origin), in call order: heads of decode.RECORD_HEAD records, all
 *   accesses (no resize) of `width` dimensions; vals their start, count, stride and block (4 x width int64 each);
 *   tids (int32) the trace's dataset id of each `slot`, or None where `slot` is that id; origin the trace's clock
 *   origin, taken off `t0` (0.0 where `t0` is on the trace's clock already).
 *   The result's rows are those compact_runs keeps, in order: their heads (slot: the dataset id; t0: the trace's
 *   clock) and vals copied, and per row its rep
 *   (int64), dt (the run's total, float64), t_step (float64) and step (width int64). The same folding rule,
 *   term for term (segments of consecutive pairs with one start offset, a segment that begins where the previous
 *   long one ended dropping its first pair, runs of at least MIN_REP accesses) and the same arithmetic, so a batch
 *   is written as before (tests/instrumentation/test_heldtakes.py compares the two).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MIN_REP 3

typedef struct {
    double t0, dt;
    int64_t n, nbytes;
    int32_t slot;
    int8_t op, ndim;
    int16_t pad;
} rec_head_t; /* hotpath.c's head_t, decode.RECORD_HEAD */

/* The fold's working arrays (about 46 bytes a record), kept from batch to batch: allocated anew, their pages were
 * faulted in at every batch, and a fault costs tens of microseconds when the machine reclaims memory for other
 * processes (the flusher's CPU then grew 3-5 fold in some runs of benchmarks/speed/tracing_overhead.py
 * --per-call-only, on the earlier code as well). One fold at a time uses them (it runs without the GIL): another
 * allocates its own. */
#define SCRATCH_KEPT (4 << 20)
static void *scratch;
static size_t scratch_size;
static int scratch_busy;

static void *work_get(size_t size, int *kept) {
    *kept = 0;
    if (scratch_busy || size > SCRATCH_KEPT) return PyMem_Malloc(size);
    if (size > scratch_size) {
        void *p = PyMem_Realloc(scratch, size);
        if (p == NULL) return NULL;
        scratch = p;
        scratch_size = size;
    }
    scratch_busy = *kept = 1;
    return scratch;
}

static void work_put(void *p, int kept) {
    if (kept) scratch_busy = 0;
    else PyMem_Free(p);
}

typedef struct {
    Py_ssize_t m, width;
    const rec_head_t **h; /* record i's head */
    const int64_t **v;    /* record i's 4 x width values */
    int32_t *ds;          /* record i's dataset id */
    double *t0;           /* record i's start on the trace's clock */
    Py_ssize_t *ends;     /* the runs' first and last records */
    uint8_t *flags;       /* 2 x m: find_runs' same and brk */
    void *work;           /* what all these are carved from (work_get) */
    int kept;
} records_t;

/* Whether records i and i+1 may be consecutive accesses of one run (compact_runs' `same`). */
static int alike(const records_t *r, Py_ssize_t i) {
    const rec_head_t *a = r->h[i], *b = r->h[i + 1];
    Py_ssize_t w = r->width;
    return r->ds[i] == r->ds[i + 1] && a->op == b->op && a->n == b->n && a->nbytes == b->nbytes && a->ndim == b->ndim &&
           memcmp(r->v[i] + w, r->v[i + 1] + w, (size_t)(3 * w) * sizeof(int64_t)) == 0;
}

/* Whether the start offsets from record i to i+1 and from j to j+1 differ. */
static int other_delta(const records_t *r, Py_ssize_t i, Py_ssize_t j) {
    for (Py_ssize_t d = 0; d < r->width; d++)
        if (r->v[i + 1][d] - r->v[i][d] != r->v[j + 1][d] - r->v[j][d]) return 1;
    return 0;
}

/* first[k]..last[k] (inclusive) the runs, as compact_runs finds them; their number. `same`, `brk`: m - 1 bytes. */
static Py_ssize_t find_runs(const records_t *r, uint8_t *same, uint8_t *brk, Py_ssize_t *first, Py_ssize_t *last) {
    Py_ssize_t m = r->m, pairs = m - 1, runs = 0, prev_end = -1;
    for (Py_ssize_t i = 0; i < pairs; i++) same[i] = (uint8_t)alike(r, i);
    for (Py_ssize_t i = 0; i < pairs; i++)
        brk[i] = (uint8_t)(i == 0 || !same[i] || !same[i - 1] || other_delta(r, i, i - 1));
    Py_ssize_t i = 0;
    while (i < pairs) {
        if (!(brk[i] && same[i])) { i++; continue; }
        Py_ssize_t end = i + 1; /* the next break after i, or m - 1 */
        while (end < pairs && !brk[end]) end++;
        if (end - i >= MIN_REP - 1) { /* a long segment */
            Py_ssize_t s = i + (i == prev_end);
            prev_end = end;
            if (end - s >= MIN_REP - 1) {
                first[runs] = s;
                last[runs] = end;
                runs++;
            }
        }
        i = end;
    }
    return runs;
}

/* views[3c], views[3c+1], views[3c+2]: chunk c's heads, vals and tids (tids.obj NULL: None). */
static int gather(PyObject *chunks, Py_ssize_t width, Py_buffer *views, Py_ssize_t n_chunks, records_t *r) {
    Py_ssize_t m = 0, hv = 4 * width;
    for (Py_ssize_t c = 0; c < n_chunks; c++) {
        PyObject *chunk = PySequence_Fast_GET_ITEM(chunks, c);
        if (!PyTuple_Check(chunk) || PyTuple_GET_SIZE(chunk) != 4 || !PyFloat_Check(PyTuple_GET_ITEM(chunk, 3))) {
            PyErr_SetString(PyExc_TypeError, "fold: chunks of (heads, vals, tids, origin)");
            return -1;
        }
        for (int b = 0; b < 3; b++) {
            PyObject *obj = PyTuple_GET_ITEM(chunk, b);
            if (b == 2 && obj == Py_None) continue;
            if (PyObject_GetBuffer(obj, &views[3 * c + b], PyBUF_C_CONTIGUOUS) < 0) {
                views[3 * c + b].obj = NULL;
                return -1;
            }
        }
        Py_ssize_t k = views[3 * c].len / (Py_ssize_t)sizeof(rec_head_t);
        if (views[3 * c].len % (Py_ssize_t)sizeof(rec_head_t) ||
            views[3 * c + 1].len != k * hv * (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "fold: a chunk's heads and vals do not match");
            return -1;
        }
        m += k;
    }
    r->m = m;
    r->width = width;
    size_t mm = (size_t)(m ? m : 1);
    /* h, v, t0, then first/last (m + 2), then ds, then the two flag arrays (m each): 8-byte items first */
    size_t size = mm * (sizeof(*r->h) + sizeof(*r->v) + sizeof(*r->t0)) + sizeof(Py_ssize_t) * (mm + 2) +
                  mm * sizeof(*r->ds) + 2 * mm + 2;
    char *work = work_get(size, &r->kept);
    if (work == NULL) { PyErr_NoMemory(); return -1; }
    r->work = work;
    r->h = (const rec_head_t **)work;
    r->v = (const int64_t **)(work + mm * sizeof(*r->h));
    r->t0 = (double *)(work + mm * (sizeof(*r->h) + sizeof(*r->v)));
    r->ends = (Py_ssize_t *)(work + mm * (sizeof(*r->h) + sizeof(*r->v) + sizeof(*r->t0)));
    r->ds = (int32_t *)((char *)r->ends + sizeof(Py_ssize_t) * (mm + 2));
    r->flags = (uint8_t *)(r->ds + mm);
    Py_ssize_t i = 0;
    for (Py_ssize_t c = 0; c < n_chunks; c++) {
        const rec_head_t *h = views[3 * c].buf;
        const int64_t *v = views[3 * c + 1].buf;
        const int32_t *tids = views[3 * c + 2].obj != NULL ? views[3 * c + 2].buf : NULL;
        Py_ssize_t n_tids = tids != NULL ? views[3 * c + 2].len / (Py_ssize_t)sizeof(int32_t) : 0;
        double origin = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(chunks, c), 3));
        Py_ssize_t k = views[3 * c].len / (Py_ssize_t)sizeof(rec_head_t);
        for (Py_ssize_t j = 0; j < k; j++, i++) {
            if (h[j].ndim != width || (tids != NULL && (h[j].slot < 0 || h[j].slot >= n_tids))) {
                PyErr_SetString(PyExc_ValueError, "fold: a record of another number of dimensions or slot");
                return -1;
            }
            r->h[i] = &h[j];
            r->v[i] = v + j * hv;
            r->ds[i] = tids != NULL ? tids[h[j].slot] : h[j].slot;
            r->t0[i] = h[j].t0 - origin;
        }
    }
    return 0;
}

PyObject *hotpath_fold(PyObject *module, PyObject *args) {
    PyObject *chunks_arg, *chunks, *out = NULL;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "On:fold", &chunks_arg, &width)) return NULL;
    if (width < 0 || width > 32) { PyErr_SetString(PyExc_ValueError, "fold: width out of range"); return NULL; }
    chunks = PySequence_Fast(chunks_arg, "fold: a sequence of chunks");
    if (chunks == NULL) return NULL;
    Py_ssize_t n_chunks = PySequence_Fast_GET_SIZE(chunks);
    Py_buffer *views = PyMem_Calloc((size_t)(3 * n_chunks + 1), sizeof(Py_buffer));
    records_t r = {0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    PyObject *o[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (views == NULL) { PyErr_NoMemory(); goto done; }
    if (gather(chunks, width, views, n_chunks, &r) < 0) goto done;
    Py_ssize_t m = r.m, w = width, hv = 4 * w, runs = 0;
    uint8_t *flags = r.flags;
    Py_ssize_t *ends = r.ends;
    Py_ssize_t *first = ends, *last = ends + m / 2 + 1; /* runs hold 3 or more accesses each: at most m / 3 */
    Py_BEGIN_ALLOW_THREADS
    if (m >= MIN_REP) runs = find_runs(&r, flags, flags + m, first, last);
    Py_END_ALLOW_THREADS
    Py_ssize_t rows = m;
    for (Py_ssize_t k = 0; k < runs; k++) rows -= last[k] - first[k];
    o[0] = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(rec_head_t));
    o[1] = PyBytes_FromStringAndSize(NULL, rows * hv * (Py_ssize_t)sizeof(int64_t));
    o[2] = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(int64_t));
    o[3] = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(double));
    o[4] = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(double));
    o[5] = PyBytes_FromStringAndSize(NULL, rows * w * (Py_ssize_t)sizeof(int64_t));
    for (int k = 0; k < 6; k++)
        if (o[k] == NULL) goto done;
    rec_head_t *oh = (rec_head_t *)PyBytes_AS_STRING(o[0]);
    int64_t *ov = (int64_t *)PyBytes_AS_STRING(o[1]), *orep = (int64_t *)PyBytes_AS_STRING(o[2]);
    double *odt = (double *)PyBytes_AS_STRING(o[3]), *ots = (double *)PyBytes_AS_STRING(o[4]);
    int64_t *ostep = (int64_t *)PyBytes_AS_STRING(o[5]);
    Py_BEGIN_ALLOW_THREADS
    double csum = 0.0; /* the dt of records 0..i-1, summed in order as np.cumsum does */
    Py_ssize_t row = 0, k = 0;
    for (Py_ssize_t i = 0; i < m; row++) {
        oh[row] = *r.h[i];
        oh[row].slot = r.ds[i];
        oh[row].t0 = r.t0[i];
        memcpy(ov + row * hv, r.v[i], (size_t)hv * sizeof(int64_t));
        if (k < runs && first[k] == i) {
            Py_ssize_t a = first[k], b = last[k], rep = b - a + 1;
            double before = csum;
            for (Py_ssize_t j = a; j <= b; j++) csum += r.h[j]->dt;
            orep[row] = rep;
            odt[row] = csum - before;
            ots[row] = (r.t0[b] - r.t0[a]) / (double)(rep - 1);
            for (Py_ssize_t d = 0; d < w; d++) ostep[row * w + d] = r.v[a + 1][d] - r.v[a][d];
            i = b + 1;
            k++;
        } else {
            csum += r.h[i]->dt;
            orep[row] = 1;
            odt[row] = r.h[i]->dt;
            ots[row] = 0.0;
            for (Py_ssize_t d = 0; d < w; d++) ostep[row * w + d] = 0;
            i++;
        }
    }
    Py_END_ALLOW_THREADS
    out = PyTuple_Pack(6, o[0], o[1], o[2], o[3], o[4], o[5]);
done:
    for (int k = 0; k < 6; k++) Py_XDECREF(o[k]);
    if (views != NULL) {
        for (Py_ssize_t c = 0; c < 3 * n_chunks; c++)
            if (views[c].obj != NULL) PyBuffer_Release(&views[c]);
        PyMem_Free(views);
    }
    if (r.work != NULL) work_put(r.work, r.kept);
    Py_DECREF(chunks);
    return out;
}
