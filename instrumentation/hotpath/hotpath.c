/* The hot path of the h5py hooks: Dataset.__getitem__, __setitem__ and resize traced in C.
 *
 * A traced read runs right after HDF5 has copied its data, when the CPU caches hold that data and not the
 * tracer's. A read or write of a known dataset by ints, slices and Ellipsis is normalized here, at once,
 * into its hyperslab (as selection.fast_hyperslab does) and appended to each active tracer's Recorder: a
 * 40-byte head and 4 x ndim int64 values in two growing buffers, no Python object per access. The tracer's
 * flusher takes a Recorder's buffers as numpy arrays (Tracer._drain). Before, the hook queued a 7-tuple
 * and the flusher normalized the indexes in bulk in Python: 1.2-1.7 µs of CPU per read with the GIL held,
 * as much again as the hook (docs/tracing-overhead.md). Everything else (a dataset seen for the first
 * time, fancy indexes, new_dtype, MPI, a resize of a dataset a tracer has not numbered yet) goes to the
 * Python hook unchanged, and the Python objects it records go into the same Recorder, in call order.
 *
 * Module state, set from Python: `depth` is per thread (nested traced calls record only the outermost;
 * the Python wrappers share it through depth()/set_depth()), `recorders` the active tracers' Recorders
 * (empty: tracing is off).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MAX_RANK 32 /* HDF5's H5S_MAX_RANK */

enum { OP_READ = 0, OP_WRITE = 1, OP_RESIZE = 2 };

/* initial-exec: read at a fixed offset from the thread pointer. The default model for a shared object (general
 * dynamic) calls __tls_get_addr at every read and write of it, three times per traced call (perf, on
 * benchmarks/speed/tracing_overhead.py --per-call-only). glibc keeps static TLS room for such small variables of
 * dlopen'ed modules; without it the import fails and hooks_h5py runs in Python (tracer.py). */
static __thread int depth __attribute__((tls_model("initial-exec")));
static PyObject *recorders;    /* tuple of Recorder, one per active tracer */
static PyObject *known;        /* hooks_h5py._by_obj: id(dataset) -> (weakref, DatasetInfo) */
static PyObject *simple_types; /* frozenset of the index types normalized here */
static PyObject *overflow;     /* called when a Recorder holds more than max_pending accesses */
static Py_ssize_t max_pending;
static Py_ssize_t kick_pending = -1; /* a Recorder reaching it wakes the flusher (passes.c) */

/* passes.c */
extern __attribute__((visibility("hidden"))) int hotpath_pass_on;
void hotpath_yield(void);
void hotpath_kick_flusher(void);
int hotpath_passes_init(void);
PyObject *hotpath_flusher_wait(PyObject *m, PyObject *arg);
PyObject *hotpath_pass_done(PyObject *m, PyObject *unused);
PyObject *hotpath_kick(PyObject *m, PyObject *unused);
static PyObject *s_shape, *s_itemsize, *s_mpio, *s_axis, *s_new_dtype;

/* The dataset of the last fast record, with what a record needs of it as C values. A loop reads one dataset call
 * after call, and finding it (a dict, a weak reference, three attributes, the extent's Python ints) cost as much as
 * the record itself (benchmarks/speed/tracing_overhead.py, per call). It stands while hooks_h5py's table of known
 * datasets is unchanged (hooks_h5py calls forget() at every change of it, a dataset's death included, so `self`
 * cannot be another object at the same address) and the DatasetInfo's shape is the tuple `dims` were read from
 * (every change of extent assigns a new tuple; `shape` holds the old one, so its address is not reused). */
static struct {
    PyObject *self;  /* compared only */
    PyObject *info;  /* strong */
    PyObject *shape; /* strong */
    int ndim;
    int64_t itemsize;
    int64_t dims[MAX_RANK];
} last;
static Py_ssize_t shape_offset = -1; /* DatasetInfo.shape's slot (configure), -1: no cache */
static PyTypeObject *info_type;      /* DatasetInfo (borrowed from the slot descriptor, which configure holds) */
static PyObject *shape_slot;

static void forget_last(void) {
    last.self = NULL;
    Py_CLEAR(last.info);
    Py_CLEAR(last.shape);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.perf_counter's clock on Linux */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Recorder: one tracer's accesses since its last take() ---- */

/* One access (or resize) in the head buffer: numpy dtype tracer.RECORD_HEAD. */
typedef struct {
    double t0, dt;       /* perf_counter seconds */
    int64_t n, nbytes;   /* elements selected, their bytes */
    int32_t slot;        /* index into the Recorder's infos */
    int8_t op;           /* OP_* */
    int8_t ndim;         /* values in the dims buffer: 4 x ndim (start, count, stride, block), or the new
                            extent's ndim for a resize */
    int16_t pad;
} head_t;

typedef struct {
    PyObject_HEAD
    head_t *heads;
    Py_ssize_t n, cap;
    int64_t *dims;
    Py_ssize_t nd, dcap;
    PyObject *infos;      /* list: slot -> DatasetInfo */
    PyObject *slots;      /* dict: DatasetInfo -> slot */
    PyObject *last_info;  /* the info of the last record (borrowed: infos holds it) */
    Py_ssize_t last_slot;
    int uniform;          /* the one ndim of every record since the last take: -2 none yet, -1 mixed or a resize */
    PyObject *items;      /* list of (position, object): what the Python hooks recorded */
    PyObject *ids;        /* the tracer's dict DatasetInfo -> trace id (a resize is recorded here only once
                             the tracer numbered the dataset, with its extent before the change) */
} Recorder;

static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *p = PyMem_Realloc(*buf, (size_t)c * size);
    if (p == NULL) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

static Py_ssize_t slot_of(Recorder *r, PyObject *info) {
    if (info == r->last_info) return r->last_slot;
    PyObject *at = PyDict_GetItemWithError(r->slots, info);
    Py_ssize_t slot;
    if (at != NULL) {
        slot = PyLong_AsSsize_t(at);
    } else {
        if (PyErr_Occurred()) return -1;
        slot = PyList_GET_SIZE(r->infos);
        PyObject *v = PyLong_FromSsize_t(slot);
        if (v == NULL || PyDict_SetItem(r->slots, info, v) < 0 || PyList_Append(r->infos, info) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    r->last_info = info;
    r->last_slot = slot;
    return slot;
}

/* Append one record; `vals` holds `nvals` int64. -1 (an exception set) when out of memory. */
static int add(Recorder *r, PyObject *info, int op, int ndim, double t0, double dt, int64_t n, int64_t nbytes,
               const int64_t *vals, Py_ssize_t nvals) {
    Py_ssize_t slot = slot_of(r, info);
    if (slot < 0) return -1;
    if (grow((void **)&r->heads, &r->cap, r->n + 1, sizeof(head_t)) < 0 ||
        grow((void **)&r->dims, &r->dcap, r->nd + nvals, sizeof(int64_t)) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    head_t *h = &r->heads[r->n++];
    h->t0 = t0;
    h->dt = dt;
    h->n = n;
    h->nbytes = nbytes;
    h->slot = (int32_t)slot;
    h->op = (int8_t)op;
    h->ndim = (int8_t)ndim;
    h->pad = 0;
    if (op == OP_RESIZE || (r->uniform != -2 && r->uniform != ndim)) r->uniform = -1;
    else r->uniform = ndim;
    memcpy(r->dims + r->nd, vals, sizeof(int64_t) * (size_t)nvals);
    r->nd += nvals;
    return 0;
}

static void reset(Recorder *r) {
    r->n = r->nd = 0;
    r->last_info = NULL;
    r->uniform = -2;
}

/* ---- Block: a Recorder's buffer handed over by take() without a copy ----
 * A take used to copy the buffers into new bytes objects: 0.4-0.5 ms of the flusher's CPU for a take of 7,700
 * records, most of it page faults of the fresh memory, which a busy virtual machine makes dearer. Now the buffer
 * itself is handed over, and the Recorder carries on with one of the buffers earlier takes gave back (a small
 * pool): the hot path keeps writing into memory that is already mapped, and a new tracer's Recorder starts with
 * one too (benchmarks/speed/tracing_overhead.py --per-call-only). Everything here runs with the GIL held. */

#define POOL 8
#define POOLED_BYTES (1 << 20) /* a burst's larger buffers are freed, as before */

enum { HEADS = 0, DIMS = 1 };
static struct { void *buf; Py_ssize_t size; } pool[2][POOL];
static int pooled[2];

static void pool_put(int kind, void *buf, Py_ssize_t size) {
    if (buf == NULL) return;
    if (pooled[kind] < POOL && size <= POOLED_BYTES) {
        pool[kind][pooled[kind]].buf = buf;
        pool[kind][pooled[kind]++].size = size;
    } else {
        PyMem_Free(buf);
    }
}

/* A pooled buffer (NULL: none) and its capacity in items of `item` bytes. */
static void *pool_get(int kind, Py_ssize_t *cap, size_t item) {
    if (!pooled[kind]) { *cap = 0; return NULL; }
    pooled[kind]--;
    *cap = pool[kind][pooled[kind]].size / (Py_ssize_t)item;
    return pool[kind][pooled[kind]].buf;
}

/* A pooled buffer, else a new one of `size` bytes with its pages touched here (the flusher's thread), not by the
 * hot path's first writes; NULL (cap 0) when there is neither. */
static void *pool_or_new(int kind, Py_ssize_t *cap, size_t item, Py_ssize_t size) {
    void *buf = pool_get(kind, cap, item);
    if (buf != NULL || size <= 0 || size > POOLED_BYTES) return buf;
    buf = PyMem_Malloc((size_t)size);
    if (buf == NULL) return NULL;
    Py_BEGIN_ALLOW_THREADS
    memset(buf, 0, (size_t)size);
    Py_END_ALLOW_THREADS
    *cap = size / (Py_ssize_t)item;
    return buf;
}

typedef struct {
    PyObject_HEAD
    void *buf;
    Py_ssize_t len, size; /* bytes recorded, bytes allocated */
    int kind;
    int uniform;          /* heads: the Recorder's `uniform` at the take */
} Block;

static int block_getbuffer(Block *b, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)b, b->buf != NULL ? b->buf : (void *)"", b->len, 1, flags);
}

static Py_ssize_t block_len(Block *b) { return b->len; }

static void block_dealloc(Block *b) {
    pool_put(b->kind, b->buf, b->size);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyBufferProcs block_as_buffer = {.bf_getbuffer = (getbufferproc)block_getbuffer};
static PySequenceMethods block_as_sequence = {.sq_length = (lenfunc)block_len};

static PyMemberDef block_members[] = {
    {"uniform", T_INT, offsetof(Block, uniform), READONLY,
     "heads: the one number of dimensions of every record taken (no resize among them), -1 mixed or a resize, -2 "
     "none (the flusher's check of a take without reading it: instrumentation/heldtakes.py)"},
    {NULL}
};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "instrumentation._hotpath.Block",
    .tp_doc = "The bytes of a Recorder's buffer as take() handed it over (a read-only buffer).",
    .tp_basicsize = sizeof(Block),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_as_buffer,
    .tp_as_sequence = &block_as_sequence,
    .tp_members = block_members,
};

static Block *block_of(int kind, void *buf, Py_ssize_t len, Py_ssize_t size) {
    Block *b = PyObject_New(Block, &BlockType);
    if (b == NULL) return NULL;
    b->buf = buf;
    b->len = len;
    b->size = size;
    b->kind = kind;
    b->uniform = -2;
    return b;
}

static PyObject *recorder_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *ids;
    if (!PyArg_ParseTuple(a, "O!:Recorder", &PyDict_Type, &ids)) return NULL;
    Recorder *r = (Recorder *)type->tp_alloc(type, 0);
    if (r == NULL) return NULL;
    r->infos = PyList_New(0);
    r->slots = PyDict_New();
    r->items = PyList_New(0);
    Py_INCREF(ids);
    r->ids = ids;
    r->uniform = -2;
    if (r->infos == NULL || r->slots == NULL || r->items == NULL) { Py_DECREF(r); return NULL; }
    r->heads = pool_get(HEADS, &r->cap, sizeof(head_t));
    r->dims = pool_get(DIMS, &r->dcap, sizeof(int64_t));
    return (PyObject *)r;
}

static int recorder_traverse(Recorder *r, visitproc visit, void *arg) {
    Py_VISIT(r->infos); Py_VISIT(r->slots); Py_VISIT(r->items); Py_VISIT(r->ids);
    return 0;
}

static int recorder_clear(Recorder *r) {
    Py_CLEAR(r->infos); Py_CLEAR(r->slots); Py_CLEAR(r->items); Py_CLEAR(r->ids);
    r->last_info = NULL;
    return 0;
}

static void recorder_dealloc(Recorder *r) {
    PyObject_GC_UnTrack(r);
    recorder_clear(r);
    pool_put(HEADS, r->heads, r->cap * (Py_ssize_t)sizeof(head_t));
    pool_put(DIMS, r->dims, r->dcap * (Py_ssize_t)sizeof(int64_t));
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *recorder_append(Recorder *r, PyObject *obj) {
    PyObject *pair = Py_BuildValue("(nO)", r->n, obj);
    if (pair == NULL) return NULL;
    int rc = PyList_Append(r->items, pair);
    Py_DECREF(pair);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* (heads: Block, dims: Block, infos: list, items: list of (position, object)); the Recorder starts over, in
 * pooled buffers. `position` is the number of heads recorded before the object. */
static PyObject *recorder_take(Recorder *r, PyObject *unused) {
    /* First what the Recorder carries on with: touching new buffers lets other threads run, and the hot path may
     * record meanwhile (into the buffers handed over below, which it may also move). Then, with nothing between
     * that could let another thread run (no allocation), the buffers change hands. */
    Py_ssize_t hcap = 0, dcap = 0;
    head_t *nh = pool_or_new(HEADS, &hcap, sizeof(head_t), r->cap * (Py_ssize_t)sizeof(head_t));
    int64_t *nd = pool_or_new(DIMS, &dcap, sizeof(int64_t), r->dcap * (Py_ssize_t)sizeof(int64_t));
    Block *heads = block_of(HEADS, NULL, 0, 0), *dims = block_of(DIMS, NULL, 0, 0);
    PyObject *infos = PyList_New(0), *slots = PyDict_New(), *items = PyList_New(0);
    if (heads == NULL || dims == NULL || infos == NULL || slots == NULL || items == NULL) {
        Py_XDECREF(heads); Py_XDECREF(dims); Py_XDECREF(infos); Py_XDECREF(slots); Py_XDECREF(items);
        pool_put(HEADS, nh, hcap * (Py_ssize_t)sizeof(head_t));
        pool_put(DIMS, nd, dcap * (Py_ssize_t)sizeof(int64_t));
        return NULL;
    }
    heads->buf = r->heads;
    heads->uniform = r->uniform;
    heads->len = r->n * (Py_ssize_t)sizeof(head_t);
    heads->size = r->cap * (Py_ssize_t)sizeof(head_t);
    dims->buf = r->dims;
    dims->len = r->nd * (Py_ssize_t)sizeof(int64_t);
    dims->size = r->dcap * (Py_ssize_t)sizeof(int64_t);
    PyObject *taken_infos = r->infos, *taken_slots = r->slots, *taken_items = r->items;
    r->infos = infos;
    r->slots = slots;
    r->items = items;
    reset(r);
    r->heads = nh;
    r->cap = hcap;
    r->dims = nd;
    r->dcap = dcap;
    PyObject *out = PyTuple_Pack(4, (PyObject *)heads, (PyObject *)dims, taken_infos, taken_items);
    Py_DECREF(heads);
    Py_DECREF(dims);
    Py_DECREF(taken_infos);
    Py_DECREF(taken_slots);
    Py_DECREF(taken_items);
    return out;
}

static Py_ssize_t recorder_len(Recorder *r) { return r->n + PyList_GET_SIZE(r->items); }

static PySequenceMethods recorder_as_sequence = {.sq_length = (lenfunc)recorder_len};

static PyMethodDef recorder_methods[] = {
    {"append", (PyCFunction)recorder_append, METH_O, "append(obj): a record of the Python hooks, after the accesses so far."},
    {"take", (PyCFunction)recorder_take, METH_NOARGS,
     "take() -> (heads, dims, infos, items): everything recorded since the last take (module docstring)."},
    {NULL}
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "instrumentation._hotpath.Recorder",
    .tp_doc = "Recorder(ids): one tracer's accesses since its last take(), as arrays (module docstring).",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = recorder_new,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_as_sequence = &recorder_as_sequence,
    .tp_methods = recorder_methods,
};

/* ---- normalizing an index (selection.fast_hyperslab, in C) ---- */

/* The DatasetInfo of a dataset the hooks know, or NULL (borrowed; no exception set). */
static PyObject *info_of(PyObject *self) {
    PyObject *key = PyLong_FromVoidPtr(self);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *entry = PyDict_GetItemWithError(known, key); /* borrowed */
    Py_DECREF(key);
    if (entry == NULL || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) { PyErr_Clear(); return NULL; }
    if (PyWeakref_GetObject(PyTuple_GET_ITEM(entry, 0)) != self) return NULL;
    return PyTuple_GET_ITEM(entry, 1);
}

static int as_int64(PyObject *v, int64_t *out) {
    if (PyLong_CheckExact(v)) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        *out = x;
        return 0;
    }
    PyObject *i = PyNumber_Index(v); /* numpy integers */
    if (i == NULL) return -1;
    long long x = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x;
    return 0;
}

/* Whether `x` is of an index type normalized here (int, slice, Ellipsis and numpy integers: simple_types). */
static int simple_index(PyObject *x) {
    PyTypeObject *t = Py_TYPE(x);
    if (t == &PySlice_Type || t == &PyLong_Type || x == Py_Ellipsis) return 1;
    return PySet_Contains(simple_types, (PyObject *)t) == 1;
}

/* `vals` <- start, count, stride and block (ndim values each) of `index` on an array of extent `dims`; *n the
 * elements selected. 0, or -1 when fast_hyperslab would give None (the Python hook decides then; an
 * exception may be set). */
static int hyperslab(PyObject *index, Py_ssize_t ndim, const int64_t *dims, int64_t *vals, int64_t *n) {
    Py_ssize_t nargs;
    PyObject *one[1];
    PyObject *const *args;
    if (PyTuple_CheckExact(index)) {
        nargs = PyTuple_GET_SIZE(index);
        args = &PyTuple_GET_ITEM(index, 0);
    } else {
        one[0] = index;
        args = one;
        nargs = 1;
    }
    if (ndim > MAX_RANK) return -1;
    Py_ssize_t ellipsis = -1;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!simple_index(args[i])) return -1;
        if (args[i] == Py_Ellipsis) {
            if (ellipsis >= 0) return -1;
            ellipsis = i;
        }
    }
    Py_ssize_t fill = ndim - (nargs - (ellipsis >= 0)); /* whole dimensions: at the Ellipsis, else at the end */
    if (fill < 0) return -1;
    if (ellipsis < 0) ellipsis = nargs;
    int64_t *start = vals, *count = vals + ndim, *stride = vals + 2 * ndim, *block = vals + 3 * ndim;
    int64_t total = 1;
    Py_ssize_t a = 0;
    for (Py_ssize_t d = 0; d < ndim; d++) {
        int64_t dim = dims[d];
        PyObject *x;
        if (d >= ellipsis && d < ellipsis + fill) {
            x = NULL; /* a whole dimension */
        } else {
            if (a == ellipsis) a++;
            x = args[a++];
        }
        if (x == NULL || PySlice_Check(x)) {
            Py_ssize_t lo = 0, hi = (Py_ssize_t)dim, step = 1;
            if (x != NULL && PySlice_Unpack(x, &lo, &hi, &step) < 0) return -1;
            Py_ssize_t m = PySlice_AdjustIndices((Py_ssize_t)dim, &lo, &hi, step);
            if (step != 1 && m > 1) {
                if (step < 0) { lo += (m - 1) * step; step = -step; }
                start[d] = lo; count[d] = m; stride[d] = step; block[d] = 1;
            } else {
                start[d] = lo; count[d] = 1; stride[d] = 1; block[d] = m;
            }
            total *= m;
        } else {
            int64_t i;
            if (as_int64(x, &i) < 0) return -1;
            start[d] = i < 0 ? i + dim : i;
            count[d] = stride[d] = block[d] = 1;
        }
    }
    *n = total;
    return 0;
}

/* `last` <- the known dataset `self`, unless it is unknown, MPI (its transfers may be collective: the Python hook
 * asks) or its extent or item size unusable here: then -1 (no exception set). */
static int remember(PyObject *self) {
    forget_last();
    PyObject *info = info_of(self);
    if (info == NULL) return -1;
    PyObject *mpio = PyObject_GetAttr(info, s_mpio);
    PyObject *shape = PyObject_GetAttr(info, s_shape);
    PyObject *itemsize = PyObject_GetAttr(info, s_itemsize);
    int ok = mpio == Py_False && shape != NULL && PyTuple_CheckExact(shape) && PyTuple_GET_SIZE(shape) <= MAX_RANK &&
             itemsize != NULL && PyLong_Check(itemsize);
    if (ok) {
        last.ndim = (int)PyTuple_GET_SIZE(shape);
        for (int d = 0; ok && d < last.ndim; d++) ok = as_int64(PyTuple_GET_ITEM(shape, d), &last.dims[d]) == 0;
        last.itemsize = ok ? PyLong_AsLongLong(itemsize) : 0;
        ok = ok && !PyErr_Occurred();
    }
    Py_XDECREF(mpio);
    Py_XDECREF(itemsize);
    PyErr_Clear();
    if (!ok) {
        Py_XDECREF(shape);
        return -1;
    }
    Py_INCREF(info);
    last.info = info;
    last.shape = shape; /* the reference GetAttr gave */
    last.self = self;
    return 0;
}

/* Whether `last` holds `self` with its extent as it is now. */
static inline int remembered(PyObject *self) {
    return self == last.self && shape_offset >= 0 && Py_TYPE(last.info) == info_type &&
           *(PyObject **)((char *)last.info + shape_offset) == last.shape;
}

/* ---- the hooks ---- */

typedef struct {
    PyObject_HEAD
    PyObject *original; /* the h5py method */
    PyObject *slow;     /* reads/writes: slow(self, args, new_dtype, t0, dt), the Python record, never raises;
                           resize: the Python hook, called instead of the original */
    PyObject *failed;   /* failed(self): a traced read or write raised */
    int op;             /* OP_*: __getitem__(self, args[, new_dtype]); __setitem__(self, args, val);
                           resize(self, size[, axis]) */
    PyObject *dict;     /* functools.update_wrapper's attributes */
    vectorcallfunc vectorcall;
} Hook;

static void full_queues(void) {
    Py_ssize_t k = PyTuple_GET_SIZE(recorders);
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t n = recorder_len((Recorder *)PyTuple_GET_ITEM(recorders, i));
        if (n > max_pending) {
            PyObject *r = PyObject_CallNoArgs(overflow);
            Py_XDECREF(r);
            return;
        }
        if (n == kick_pending) hotpath_kick_flusher(); /* once per filling: a take empties the Recorder */
    }
}

/* Record a read or write of a known dataset by ints/slices in every Recorder; 0, or -1 for the Python hook
 * (nothing recorded then). No exception set on return. */
static int record_fast(PyObject *self, PyObject *index, int op, double t0, double dt) {
    if (!remembered(self) && remember(self) < 0) return -1;
    int64_t vals[4 * MAX_RANK], n = 0;
    if (hyperslab(index, last.ndim, last.dims, vals, &n) < 0) {
        PyErr_Clear();
        return -1;
    }
    PyObject *info = last.info;
    Py_INCREF(info); /* full_queues below runs Python code, which may forget `last` */
    int ndim = last.ndim, rc = 0;
    int64_t nbytes = n * last.itemsize;
    Py_ssize_t k = PyTuple_GET_SIZE(recorders);
    for (Py_ssize_t i = 0; i < k; i++)
        if (add((Recorder *)PyTuple_GET_ITEM(recorders, i), info, op, ndim, t0, dt, n, nbytes, vals, 4 * ndim) < 0)
            rc = -1; /* out of memory: the Python hook records it (twice in a Recorder that took it) */
    PyErr_Clear();
    if (rc == 0) full_queues();
    PyErr_Clear();
    Py_DECREF(info);
    /* after the call and its record (its time is the call's): the Python hooks' records through record() too */
    if (__atomic_load_n(&hotpath_pass_on, __ATOMIC_RELAXED)) hotpath_yield(); /* the flusher's pass runs alone */
    return rc;
}

static PyObject *io_call(Hook *h, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int write = h->op == OP_WRITE;
    if (depth || PyTuple_GET_SIZE(recorders) == 0 || nargs < 2 || nargs + nkw > 3 || (write && nargs != 3))
        return PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    PyObject *self = argv[0], *args = argv[1], *new_dtype = nargs == 3 && !write ? argv[2] : Py_None;
    if (nkw == 1) { /* h5py's astype/fields wrappers pass new_dtype= by name */
        if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_new_dtype) != 0) {
            PyErr_Clear();
            return PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
        }
        new_dtype = argv[nargs];
    }
    depth = 1;
    double t0 = now();
    PyObject *result = PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    double dt = now() - t0;
    depth = 0;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* the call's exception, if any, reaches the caller unchanged */
    if (result == NULL) {
        PyObject *r = PyObject_CallOneArg(h->failed, self);
        Py_XDECREF(r);
    } else if (new_dtype != Py_None || record_fast(self, args, h->op, t0, dt) < 0) {
        PyObject *r = PyObject_CallFunction(h->slow, "OOOdd", self, args, new_dtype, t0, dt);
        Py_XDECREF(r);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return result;
}

/* The extent `resize(size[, axis])` sets on an array of extent `shape` (hooks_h5py._resized), as a new
 * tuple, or NULL (no exception set). */
static PyObject *resized(PyObject *shape, PyObject *size, PyObject *axis) {
    PyObject *out = NULL;
    if (axis == Py_None) {
        PyObject *seq = PySequence_Tuple(size);
        if (seq == NULL) goto done;
        out = PyTuple_New(PyTuple_GET_SIZE(seq));
        for (Py_ssize_t i = 0; out != NULL && i < PyTuple_GET_SIZE(seq); i++) {
            PyObject *v = PyNumber_Index(PyTuple_GET_ITEM(seq, i));
            if (v == NULL) Py_CLEAR(out);
            else PyTuple_SET_ITEM(out, i, v);
        }
        Py_DECREF(seq);
    } else {
        Py_ssize_t k = PyNumber_AsSsize_t(axis, NULL);
        PyObject *v = PyNumber_Index(size);
        if (k < 0 || k >= PyTuple_GET_SIZE(shape) || v == NULL) { Py_XDECREF(v); goto done; }
        out = PyTuple_New(PyTuple_GET_SIZE(shape));
        if (out == NULL) { Py_DECREF(v); goto done; }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
            PyObject *e = i == k ? v : PyTuple_GET_ITEM(shape, i);
            if (i != k) Py_INCREF(e);
            PyTuple_SET_ITEM(out, i, e);
        }
    }
done:
    PyErr_Clear();
    return out;
}

/* resize: when every tracer has numbered the dataset (so its record holds the extent before), the change is
 * recorded here; else the Python hook runs the call. */
static PyObject *resize_call(Hook *h, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    Py_ssize_t k = PyTuple_GET_SIZE(recorders);
    if (k == 0) return PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    PyObject *axis = nargs == 3 ? argv[2] : Py_None;
    int fast = nargs >= 2 && nargs + nkw <= 3;
    if (fast && nkw == 1) {
        fast = nargs == 2 && PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_axis) == 0;
        axis = argv[2];
    }
    PyObject *info = fast ? info_of(argv[0]) : NULL;
    PyObject *shape = info != NULL ? PyObject_GetAttr(info, s_shape) : NULL;
    PyObject *after = shape != NULL && PyTuple_Check(shape) ? resized(shape, argv[1], axis) : NULL;
    for (Py_ssize_t i = 0; after != NULL && i < k; i++) {
        PyObject *ids = ((Recorder *)PyTuple_GET_ITEM(recorders, i))->ids;
        if (PyDict_GetItemWithError(ids, info) == NULL) Py_CLEAR(after);
    }
    PyErr_Clear();
    if (after == NULL) {
        Py_XDECREF(shape);
        return PyObject_Vectorcall(h->slow, argv, nargsf, kwnames);
    }
    double t0 = now();
    PyObject *result = PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    double t1 = now();
    if (result != NULL) {
        int same = PyObject_RichCompareBool(after, shape, Py_EQ);
        if (same == 0 && PyObject_SetAttr(info, s_shape, after) == 0) {
            Py_ssize_t ndim = PyTuple_GET_SIZE(after);
            int64_t vals[MAX_RANK];
            int ok = ndim <= MAX_RANK;
            for (Py_ssize_t d = 0; ok && d < ndim; d++)
                ok = as_int64(PyTuple_GET_ITEM(after, d), &vals[d]) == 0;
            for (Py_ssize_t i = 0; ok && i < k; i++)
                add((Recorder *)PyTuple_GET_ITEM(recorders, i), info, OP_RESIZE, (int)ndim, t0, t1 - t0, 0, 0,
                    vals, ndim);
        }
        PyErr_Clear();
    }
    Py_DECREF(shape);
    Py_DECREF(after);
    return result;
}

static PyObject *hook_vectorcall(PyObject *callable, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    Hook *h = (Hook *)callable;
    return h->op == OP_RESIZE ? resize_call(h, argv, nargsf, kwnames) : io_call(h, argv, nargsf, kwnames);
}

static PyObject *hook_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *original, *slow, *failed;
    int op;
    if (!PyArg_ParseTuple(a, "OOOi:Hook", &original, &slow, &failed, &op)) return NULL;
    if (op < OP_READ || op > OP_RESIZE) { PyErr_SetString(PyExc_ValueError, "op: 0 read, 1 write, 2 resize"); return NULL; }
    Hook *h = (Hook *)type->tp_alloc(type, 0);
    if (h == NULL) return NULL;
    Py_INCREF(original); h->original = original;
    Py_INCREF(slow); h->slow = slow;
    Py_INCREF(failed); h->failed = failed;
    h->op = op;
    h->vectorcall = hook_vectorcall;
    return (PyObject *)h;
}

static int hook_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->original); Py_VISIT(h->slow); Py_VISIT(h->failed); Py_VISIT(h->dict);
    return 0;
}

static int hook_clear(Hook *h) {
    Py_CLEAR(h->original); Py_CLEAR(h->slow); Py_CLEAR(h->failed); Py_CLEAR(h->dict);
    return 0;
}

static void hook_dealloc(Hook *h) {
    PyObject_GC_UnTrack(h);
    hook_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *hook_get(PyObject *h, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) { Py_INCREF(h); return h; }
    return PyMethod_New(h, obj);
}

static PyGetSetDef hook_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

static PyTypeObject HookType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "instrumentation._hotpath.Hook",
    .tp_doc = "Hook(original, slow, failed, op): a traced Dataset.__getitem__ (op 0), __setitem__ (1) or resize (2) "
              "(module docstring).",
    .tp_basicsize = sizeof(Hook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = hook_new,
    .tp_dealloc = (destructor)hook_dealloc,
    .tp_traverse = (traverseproc)hook_traverse,
    .tp_clear = (inquiry)hook_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Hook, vectorcall),
    .tp_dictoffset = offsetof(Hook, dict),
    .tp_descr_get = hook_get,
    .tp_getset = hook_getset,
};

/* ---- module ---- */

static PyObject *set_recorders(PyObject *m, PyObject *arg) {
    if (!PyTuple_Check(arg)) { PyErr_SetString(PyExc_TypeError, "a tuple of Recorders"); return NULL; }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(arg); i++)
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(arg, i), &RecorderType)) {
            PyErr_SetString(PyExc_TypeError, "a tuple of Recorders");
            return NULL;
        }
    Py_INCREF(arg);
    Py_XSETREF(recorders, arg);
    Py_RETURN_NONE;
}

static PyObject *configure(PyObject *m, PyObject *a) {
    PyObject *k, *t, *o, *slot = NULL;
    Py_ssize_t mp;
    if (!PyArg_ParseTuple(a, "O!O!On|O:configure", &PyDict_Type, &k, &PyFrozenSet_Type, &t, &o, &mp, &slot))
        return NULL;
    Py_INCREF(k); Py_XSETREF(known, k);
    Py_INCREF(t); Py_XSETREF(simple_types, t);
    Py_INCREF(o); Py_XSETREF(overflow, o);
    max_pending = mp;
    forget_last();
    shape_offset = -1;
    info_type = NULL;
    Py_CLEAR(shape_slot);
    if (slot != NULL && Py_IS_TYPE(slot, &PyMemberDescr_Type)) { /* a __slots__ member: an object's pointer */
        PyMemberDef *def = ((PyMemberDescrObject *)slot)->d_member;
        if (def->type == T_OBJECT_EX || def->type == T_OBJECT) {
            Py_INCREF(slot);
            shape_slot = slot;
            shape_offset = def->offset;
            info_type = ((PyMemberDescrObject *)slot)->d_common.d_type;
        }
    }
    Py_RETURN_NONE;
}

/* record(dataset, index, op, t0, dt) -> bool: record_fast for the Python hook (a dataset's first sight, once it
 * described it: a new Dataset object per access, h5netcdf's way, then costs no Python normalization and no Python
 * record); False: not recorded (not a known dataset, not ints/slices, MPI). */
static PyObject *record(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "record(dataset, index, op, t0, dt)");
        return NULL;
    }
    long op = PyLong_AsLong(args[2]);
    double t0 = PyFloat_AsDouble(args[3]), dt = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (op != OP_READ && op != OP_WRITE) {
        PyErr_SetString(PyExc_ValueError, "op: 0 read, 1 write");
        return NULL;
    }
    if (depth || PyTuple_GET_SIZE(recorders) == 0) Py_RETURN_FALSE;
    return PyBool_FromLong(record_fast(args[0], args[1], (int)op, t0, dt) == 0);
}

static PyObject *forget(PyObject *m, PyObject *unused) {
    forget_last();
    Py_RETURN_NONE;
}

static PyObject *get_depth(PyObject *m, PyObject *unused) { return PyLong_FromLong(depth); }

static PyObject *set_depth(PyObject *m, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    depth = (int)v;
    Py_RETURN_NONE;
}

static PyObject *set_kick(PyObject *m, PyObject *a) {
    Py_ssize_t n = PyLong_AsSsize_t(a);
    if (n == -1 && PyErr_Occurred()) return NULL;
    kick_pending = n;
    Py_RETURN_NONE;
}

PyObject *hotpath_fold(PyObject *m, PyObject *args); /* fold.c */

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(known, simple_types, overflow, max_pending[, shape_slot]): the hooks' shared state; shape_slot, "
     "DatasetInfo.shape (a __slots__ member), lets the hook keep the last dataset's extent as C values."},
    {"set_kick", set_kick, METH_O, "set_kick(kick_pending): a Recorder reaching kick_pending accesses wakes the "
     "flusher (which passes seldom) long before it is full."},
    {"flusher_wait", hotpath_flusher_wait, METH_O, "flusher_wait(seconds): the flusher sleeps without the GIL until "
     "kick() or the timeout, then announces its pass (traced calls wait for its end: pass_done()) and takes the GIL."},
    {"pass_done", hotpath_pass_done, METH_NOARGS, "pass_done(): the flusher's pass ended."},
    {"kick", hotpath_kick, METH_NOARGS, "kick(): ask the flusher for a pass now."},
    {"forget", forget, METH_NOARGS, "forget(): the table of known datasets changed (the last dataset is looked up "
     "again)."},
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL, "record(dataset, index, op, t0, dt) -> bool: "
     "a read or write by ints/slices of a known dataset recorded as the hook records it (False: not recorded)."},
    {"set_recorders", set_recorders, METH_O, "set_recorders(recorders): the active tracers' Recorders; () stops tracing."},
    {"depth", get_depth, METH_NOARGS, "Traced calls in progress on this thread."},
    {"set_depth", set_depth, METH_O, "Set this thread's traced-call depth."},
    {"fold", hotpath_fold, METH_VARARGS, "fold(chunks, width): a batch's records with their runs folded "
     "(instrumentation/hotpath/fold.c)."},
    {NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hotpath", "Traced h5py reads, writes and resizes in C.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__hotpath(void) {
    if (PyType_Ready(&HookType) < 0 || PyType_Ready(&RecorderType) < 0 || PyType_Ready(&BlockType) < 0) return NULL;
    if (hotpath_passes_init() != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
        return NULL;
    }
    recorders = PyTuple_New(0);
    s_shape = PyUnicode_InternFromString("shape");
    s_itemsize = PyUnicode_InternFromString("itemsize");
    s_mpio = PyUnicode_InternFromString("mpio");
    s_axis = PyUnicode_InternFromString("axis");
    s_new_dtype = PyUnicode_InternFromString("new_dtype");
    if (recorders == NULL || s_shape == NULL || s_itemsize == NULL || s_mpio == NULL || s_axis == NULL ||
        s_new_dtype == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&HookType);
    if (PyModule_AddObject(m, "Hook", (PyObject *)&HookType) < 0) { Py_DECREF(&HookType); Py_DECREF(m); return NULL; }
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
