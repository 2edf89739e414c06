/* The hot path of the h5py hooks: Dataset.__getitem__ and __setitem__ traced in C.
 *
 * A traced read runs right after HDF5 has copied its data, when the CPU caches hold that data and
 * not the tracer's: in Python the wrapper and its record cost 4-6 µs per read there (a few hundred
 * cold memory references), 1-2% of a realistic h5py read. Here a read or write of a known dataset by
 * ints and slices costs two clock reads, a dict probe and one tuple: the same item the Python hook
 * queues (hooks_h5py._record), for the tracer's flusher thread to normalize in bulk. Everything else (a
 * dataset seen for the first time, fancy indexes, new_dtype, MPI) goes to the Python hook unchanged.
 *
 * Module state, set from Python: `depth` is per thread (nested traced calls record only the outermost;
 * the Python wrappers share it through depth()/set_depth()), `queues` the append methods of the active
 * tracers' queues (empty: tracing is off).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <time.h>

static __thread int depth;
static PyObject *queues;       /* tuple of bound deque.append methods, one per active tracer */
static PyObject *known;        /* hooks_h5py._by_obj: id(dataset) -> (weakref, DatasetInfo) */
static PyObject *simple_types; /* frozenset of index types that can be normalized later */
static PyObject *overflow;     /* called when a queue is longer than max_pending */
static Py_ssize_t max_pending;
static PyObject *s_shape, *s_itemsize, *s_mpio;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* time.perf_counter's clock on Linux */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    PyObject_HEAD
    PyObject *original; /* the h5py method */
    PyObject *slow;     /* slow(self, args, new_dtype, t0, dt): the Python record, never raises */
    PyObject *failed;   /* failed(self): a traced call raised */
    PyObject *op;       /* records.READ: __getitem__(self, args[, new_dtype]); records.WRITE: __setitem__(self, args, val) */
    int write;
    PyObject *dict;     /* functools.update_wrapper's attributes */
    vectorcallfunc vectorcall;
} Hook;

/* The item hooks_h5py._record queues, or NULL (then the Python record decides). No exception set. */
static PyObject *item_of(PyObject *self, PyObject *args, PyObject *op, double t0, double dt) {
    PyObject *key = PyLong_FromVoidPtr(self);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *entry = PyDict_GetItemWithError(known, key); /* borrowed */
    Py_DECREF(key);
    if (entry == NULL || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) { PyErr_Clear(); return NULL; }
    if (PyWeakref_GetObject(PyTuple_GET_ITEM(entry, 0)) != self) return NULL;
    PyObject *info = PyTuple_GET_ITEM(entry, 1);
    PyObject *index;
    if (PyTuple_CheckExact(args)) {
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        for (Py_ssize_t i = 0; i < n; i++) {
            int ok = PySet_Contains(simple_types, (PyObject *)Py_TYPE(PyTuple_GET_ITEM(args, i)));
            if (ok != 1) { PyErr_Clear(); return NULL; }
        }
        Py_INCREF(args);
        index = args;
    } else {
        int ok = PySet_Contains(simple_types, (PyObject *)Py_TYPE(args));
        if (ok != 1) { PyErr_Clear(); return NULL; }
        index = PyTuple_Pack(1, args);
        if (index == NULL) { PyErr_Clear(); return NULL; }
    }
    PyObject *mpio = PyObject_GetAttr(info, s_mpio);
    PyObject *shape = PyObject_GetAttr(info, s_shape);
    PyObject *itemsize = PyObject_GetAttr(info, s_itemsize);
    PyObject *item = NULL;
    if (mpio == Py_False && shape != NULL && PyTuple_Check(shape) && itemsize != NULL) {
        PyObject *a = PyFloat_FromDouble(t0), *b = PyFloat_FromDouble(dt);
        if (a != NULL && b != NULL)
            item = PyTuple_Pack(7, info, op, index, shape, itemsize, a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    Py_XDECREF(mpio);
    Py_XDECREF(shape);
    Py_XDECREF(itemsize);
    Py_DECREF(index);
    PyErr_Clear();
    return item;
}

static void record(Hook *h, PyObject *self, PyObject *args, PyObject *new_dtype, double t0, double dt) {
    PyObject *item = new_dtype == Py_None ? item_of(self, args, h->op, t0, dt) : NULL;
    if (item == NULL) {
        PyObject *r = PyObject_CallFunction(h->slow, "OOOdd", self, args, new_dtype, t0, dt);
        Py_XDECREF(r);
        PyErr_Clear();
        return;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(queues);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *append = PyTuple_GET_ITEM(queues, i);
        PyObject *r = PyObject_CallOneArg(append, item);
        Py_XDECREF(r);
        PyObject *queue = PyMethod_Check(append) ? PyMethod_GET_SELF(append) : PyCFunction_GET_SELF(append);
        if (queue != NULL && PyObject_Size(queue) > max_pending) {
            r = PyObject_CallNoArgs(overflow);
            Py_XDECREF(r);
        }
        PyErr_Clear();
    }
    Py_DECREF(item);
}

static PyObject *hook_vectorcall(PyObject *callable, PyObject *const *argv, size_t nargsf, PyObject *kwnames) {
    Hook *h = (Hook *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (depth || PyTuple_GET_SIZE(queues) == 0 || nargs < 2 || nargs + nkw > 3 || (h->write && nargs != 3))
        return PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    PyObject *self = argv[0], *args = argv[1], *new_dtype = nargs == 3 && !h->write ? argv[2] : Py_None;
    if (nkw == 1) { /* h5py's astype/fields wrappers pass new_dtype= by name */
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "new_dtype") != 0)
            return PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
        new_dtype = argv[nargs];
    }
    depth = 1;
    double t0 = now();
    PyObject *result = PyObject_Vectorcall(h->original, argv, nargsf, kwnames);
    double dt = now() - t0;
    depth = 0;
    if (result == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = PyObject_CallOneArg(h->failed, self);
        Py_XDECREF(r);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* nothing is pending after a success; keep it so if something were */
    record(h, self, args, new_dtype, t0, dt);
    PyErr_Restore(type, value, tb);
    return result;
}

static PyObject *hook_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *original, *slow, *failed, *op;
    int write;
    if (!PyArg_ParseTuple(a, "OOOOp:Hook", &original, &slow, &failed, &op, &write)) return NULL;
    Hook *h = (Hook *)type->tp_alloc(type, 0);
    if (h == NULL) return NULL;
    Py_INCREF(original); h->original = original;
    Py_INCREF(slow); h->slow = slow;
    Py_INCREF(failed); h->failed = failed;
    Py_INCREF(op); h->op = op;
    h->write = write;
    h->vectorcall = hook_vectorcall;
    return (PyObject *)h;
}

static int hook_traverse(Hook *h, visitproc visit, void *arg) {
    Py_VISIT(h->original); Py_VISIT(h->slow); Py_VISIT(h->failed); Py_VISIT(h->op); Py_VISIT(h->dict);
    return 0;
}

static int hook_clear(Hook *h) {
    Py_CLEAR(h->original); Py_CLEAR(h->slow); Py_CLEAR(h->failed); Py_CLEAR(h->op); Py_CLEAR(h->dict);
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
    .tp_doc = "Hook(original, slow, failed, op, write): a traced Dataset.__getitem__ or __setitem__ (module docstring).",
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

static PyObject *set_queues(PyObject *m, PyObject *arg) {
    if (!PyTuple_Check(arg)) { PyErr_SetString(PyExc_TypeError, "a tuple of append methods"); return NULL; }
    Py_INCREF(arg);
    Py_XSETREF(queues, arg);
    Py_RETURN_NONE;
}

static PyObject *configure(PyObject *m, PyObject *a) {
    PyObject *k, *t, *o;
    Py_ssize_t mp;
    if (!PyArg_ParseTuple(a, "O!O!On:configure", &PyDict_Type, &k, &PyFrozenSet_Type, &t, &o, &mp)) return NULL;
    Py_INCREF(k); Py_XSETREF(known, k);
    Py_INCREF(t); Py_XSETREF(simple_types, t);
    Py_INCREF(o); Py_XSETREF(overflow, o);
    max_pending = mp;
    Py_RETURN_NONE;
}

static PyObject *get_depth(PyObject *m, PyObject *unused) { return PyLong_FromLong(depth); }

static PyObject *set_depth(PyObject *m, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    depth = (int)v;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(known, simple_types, overflow, max_pending): the hooks' shared state."},
    {"set_queues", set_queues, METH_O, "set_queues(appends): the active tracers' queue appends; () stops tracing."},
    {"depth", get_depth, METH_NOARGS, "Traced calls in progress on this thread."},
    {"set_depth", set_depth, METH_O, "Set this thread's traced-call depth."},
    {NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hotpath", "Traced h5py reads and writes in C.", -1, methods};

PyMODINIT_FUNC PyInit__hotpath(void) {
    if (PyType_Ready(&HookType) < 0) return NULL;
    queues = PyTuple_New(0);
    s_shape = PyUnicode_InternFromString("shape");
    s_itemsize = PyUnicode_InternFromString("itemsize");
    s_mpio = PyUnicode_InternFromString("mpio");
    if (queues == NULL || s_shape == NULL || s_itemsize == NULL || s_mpio == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&HookType);
    if (PyModule_AddObject(m, "Hook", (PyObject *)&HookType) < 0) { Py_DECREF(&HookType); Py_DECREF(m); return NULL; }
    return m;
}
