/* ioadvisor's libhdf5 interposer: records every H5Dread / H5Dwrite of a process.
 *
 * Loaded with LD_PRELOAD. It defines H5Dread and H5Dwrite (and H5Dread_multi / H5Dwrite_multi of
 * HDF5 >= 1.14: one access per dataset of the call) and H5Dset_extent, so calls from any
 * library that imports them (netCDF-C, h5py's and PyTables' extension modules,
 * a C/Fortran program) reach it first. Wheels bundle their own libhdf5 and load
 * it privately (RTLD_LOCAL), where dlsym(RTLD_NEXT) cannot reach it: the real
 * function is found from the caller instead (dladdr on the return address names
 * the calling library, dlopen(RTLD_NOLOAD) + dlsym on it find the libhdf5 that
 * library was linked with), so two copies of libhdf5 in one process each get
 * their own calls back. That lookup is cached per calling library.
 *
 * Everything about an access is asked of the ids passed in, through the same
 * libhdf5 copy, before the real call (after a failed call the caller reads the
 * error stack, which any further API call would clear): the dataset's name,
 * file, extent, type, chunking and filters (once per dataset id: h5py opens
 * datasets with H5Oopen, so nothing is learned from H5Dopen), the file
 * selection, and the call's duration.
 *
 * Output (when IOADVISOR_H5_DIR is set, or after ioadv_set_dir): per process,
 * DIR/h5-PID.meta (JSON lines: libraries, callers, datasets, irregular
 * selections, extent changes) and DIR/h5-PID.acc (binary access records, struct
 * ioadv_access, in batches: see struct ioadv_batch). Written when a buffer fills,
 * every FLUSH_NS, at exit, and on ioadv_flush(). A forked child starts its own files.
 * No HDF5 headers are needed: the few types and functions used are declared here.
 *
 * Built with IOADV_WRAP (h5wrap.c) the same code is linked into a program instead, for a libhdf5 linked
 * statically, which LD_PRELOAD cannot reach: the hooks are __wrap_H5Dread etc. (the linker's
 * -Wl,--wrap=H5Dread sends the program's calls there), the real functions are __real_H5Dread etc. and the
 * libhdf5 linked in, and nothing is exported (`ioadvisor link-flags`).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(IOADV_VOL) /* h5vol.c: the hooks are not compiled in use, the connector calls the recording */
#define HOOK(name) __attribute__((unused)) static unused_##name
#define CONTROL static
#elif defined(IOADV_WRAP)
#define HOOK(name) __wrap_##name
#define CONTROL static
#else
#define HOOK(name) name
#define CONTROL
#endif

typedef int64_t hid_t; /* HDF5 >= 1.10 */
typedef int herr_t;
typedef int htri_t;
typedef unsigned long long hsize_t;
typedef long long hssize_t;
typedef herr_t (*H5E_auto2_t)(hid_t, void *);
typedef uint64_t haddr_t;
typedef int seloper_t; /* H5S_seloper_t */
typedef bool hbool_t;
typedef int (*chunk_iter_op_t)(const hsize_t *, unsigned, haddr_t, hsize_t, void *); /* HDF5 >= 1.14 */

#define H5S_ALL ((hid_t)0)
#define H5E_DEFAULT ((hid_t)0)
enum { SEL_NONE = 0, SEL_POINTS = 1, SEL_HYPERSLABS = 2, SEL_ALL = 3 };
enum { SELECT_SET = 0 };
enum { LAYOUT_CHUNKED = 2 };

#define MAXD 8          /* dimensions held inline in an access record */
#define MAX_RANK 32     /* HDF5's H5S_MAX_RANK */
#define MAX_LIBS 16     /* libhdf5 copies in one process */
#define MAX_CALLERS 256 /* libraries calling the hooked functions */
#define SITE_SLOTS 8     /* call sites remembered per thread */
#define DS_SLOTS 8192   /* dataset descriptions cached per process (open addressing) */
#define BATCH_BYTES (256u << 10) /* records written at a time (about 2,300 2-D ones) */
#define FLUSH_NS 200000000LL
#define MAX_SEL_VALUES (1u << 22) /* coordinates written for one irregular selection */
#define MAX_OFFSET_CHUNKS 100000  /* chunk byte offsets are written for datasets with at most this many chunks */
#define CREATED_SLOTS 4096
#define SPACE_SLOTS 1024

/* One access, as written to h5-PID.acc (little-endian, 48 + 32 * MAXD bytes). */
struct ioadv_access {
    double t0;          /* CLOCK_MONOTONIC seconds (Python's time.perf_counter) */
    double dt;
    uint32_t ds;        /* dataset number in the .meta file */
    uint32_t tid;       /* kernel thread id */
    uint8_t op;         /* 0 read, 1 write */
    uint8_t kind;       /* KIND_* */
    uint8_t ndim;
    uint8_t pad;
    uint16_t caller;    /* caller number in the .meta file */
    uint16_t pad2;
    uint64_t n;         /* elements selected */
    uint64_t nbytes;    /* n times the memory type's size */
    hsize_t start[MAXD], stride[MAXD], count[MAXD], block[MAXD];
};
/* The head of each batch in h5-PID.acc: n records follow, each cut to width dimensions (48 + 32 * width
 * bytes: start, stride, count and block of width values each). Most datasets have 1-4 dimensions: cutting
 * the unused ones off (304 -> 112 bytes a record in 2-D) saves about 0.06 µs of writing per record. */
struct ioadv_batch {
    uint32_t magic; /* BATCH_MAGIC */
    uint32_t n;
    uint32_t width;
    uint32_t pad;
};
#define BATCH_MAGIC 0x31414f49u /* "IOA1" */
/* A batch whose records are alike (the same in all but t0, dt and start: a loop's reads of one dataset by one
 * thread) is written as its first record, then (t0, dt, start) of each: 16 + 8 * width bytes a record, 32 in
 * 2-D instead of 112. Writing 112 bytes a record cost a C box read 0.05 µs of the interposer's 0.15 (scratch
 * build without the write, 24 alternating pairs): the kernel's page-cache copies and allocation. */
#define BATCH_ALIKE_MAGIC 0x32414f49u /* "IOA2" */
#define HEAD_BYTES offsetof(struct ioadv_access, start)

enum { KIND_ALL = 0, KIND_REGULAR = 1, KIND_BLOCKS = 2, KIND_POINTS = 3, KIND_NONE = 4, KIND_OTHER = 5 };

typedef herr_t (*dread_t)(hid_t, hid_t, hid_t, hid_t, hid_t, void *);
typedef herr_t (*dwrite_t)(hid_t, hid_t, hid_t, hid_t, hid_t, const void *);
typedef herr_t (*dread_multi_t)(size_t, hid_t *, hid_t *, hid_t *, hid_t *, hid_t, void **);      /* HDF5 >= 1.14 */
typedef herr_t (*dwrite_multi_t)(size_t, hid_t *, hid_t *, hid_t *, hid_t *, hid_t, const void **);

struct h5lib {
    int index;
    dread_t Dread;
    dwrite_t Dwrite;
    dread_multi_t Dread_multi;
    dwrite_multi_t Dwrite_multi;
    hid_t (*Dcreate2)(hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t);
    herr_t (*Dset_extent)(hid_t, const hsize_t *);
    herr_t (*Dget_num_chunks)(hid_t, hid_t, hsize_t *);
    herr_t (*Dchunk_iter)(hid_t, hid_t, chunk_iter_op_t, void *);
    ssize_t (*Iget_name)(hid_t, char *, size_t);
    ssize_t (*Fget_name)(hid_t, char *, size_t);
    hid_t (*Iget_file_id)(hid_t);
    herr_t (*Fget_intent)(hid_t, unsigned *);
    herr_t (*Fclose)(hid_t);
    hid_t (*Fopen)(const char *, unsigned, hid_t);
    hid_t (*Fget_access_plist)(hid_t);
    hid_t (*Pget_driver)(hid_t);
    hid_t (*FD_mpio_init)(void); /* parallel builds only */
    hid_t (*Dget_space)(hid_t);
    hid_t (*Dget_type)(hid_t);
    hid_t (*Dget_create_plist)(hid_t);
    hid_t (*Dget_access_plist)(hid_t);
    herr_t (*Sclose)(hid_t);
    herr_t (*Dclose)(hid_t);
    herr_t (*Sselect_hyperslab)(hid_t, seloper_t, const hsize_t *, const hsize_t *, const hsize_t *, const hsize_t *);
    herr_t (*Sselect_all)(hid_t);
    herr_t (*Sselect_none)(hid_t);
    herr_t (*Sselect_elements)(hid_t, seloper_t, size_t, const hsize_t *);
    herr_t (*Sselect_adjust)(hid_t, const hssize_t *);
    herr_t (*Sselect_copy)(hid_t, hid_t);
    herr_t (*Smodify_select)(hid_t, seloper_t, hid_t);
    herr_t (*Soffset_simple)(hid_t, const hssize_t *);
    herr_t (*Sset_extent_simple)(hid_t, int, const hsize_t *, const hsize_t *);
    herr_t (*Sset_extent_none)(hid_t);
    herr_t (*Sextent_copy)(hid_t, hid_t);
    int (*Sget_simple_extent_ndims)(hid_t);
    int (*Idec_ref)(hid_t);
    herr_t (*close)(void);
    herr_t (*Iclear_type)(int, hbool_t); /* H5I_type_t */
    herr_t (*Idestroy_type)(int);
    herr_t (*Tclose)(hid_t);
    herr_t (*Pclose)(hid_t);
    int (*Sget_simple_extent_dims)(hid_t, hsize_t *, hsize_t *);
    int (*Sget_select_type)(hid_t);
    hssize_t (*Sget_select_npoints)(hid_t);
    htri_t (*Sis_regular_hyperslab)(hid_t);
    herr_t (*Sget_regular_hyperslab)(hid_t, hsize_t *, hsize_t *, hsize_t *, hsize_t *);
    hssize_t (*Sget_select_hyper_nblocks)(hid_t);
    herr_t (*Sget_select_hyper_blocklist)(hid_t, hsize_t, hsize_t, hsize_t *);
    hssize_t (*Sget_select_elem_npoints)(hid_t);
    herr_t (*Sget_select_elem_pointlist)(hid_t, hsize_t, hsize_t, hsize_t *);
    size_t (*Tget_size)(hid_t);
    int (*Tget_class)(hid_t);
    int (*Tget_order)(hid_t);
    int (*Tget_sign)(hid_t);
    htri_t (*Tis_variable_str)(hid_t);
    int (*Pget_layout)(hid_t);
    int (*Pget_chunk)(hid_t, int, hsize_t *);
    int (*Pget_nfilters)(hid_t);
    int (*Pget_filter2)(hid_t, unsigned, unsigned *, size_t *, unsigned *, size_t, char *, unsigned *);
    herr_t (*Pget_chunk_cache)(hid_t, size_t *, size_t *, double *);
    herr_t (*Pget_fill_value)(hid_t, hid_t, void *);
    herr_t (*Eget_auto2)(hid_t, H5E_auto2_t *, void **);
    herr_t (*Eset_auto2)(hid_t, H5E_auto2_t, void *);
    herr_t (*get_libversion)(unsigned *, unsigned *, unsigned *);
};

struct caller { void *base; struct h5lib *lib; int index; };
/* later: its chunk offsets are left to its H5Dclose, or the process's exit (a read-only file: list_late);
 * name_hash: of its name then, checked before listing at the exit (an id closed unseen may be reused) */
struct dsdesc { struct h5lib *lib; hid_t id; uint32_t num; int ndim; size_t tsize; hsize_t dims[MAX_RANK]; int later;
                uint64_t name_hash; };

static struct h5lib libs[MAX_LIBS];
static int n_libs;
static struct caller callers[MAX_CALLERS];
static int n_callers; /* read without the lock: entries are complete before the count grows */
static struct dsdesc dsets[DS_SLOTS];
static struct { struct h5lib *lib; hid_t id; } created_ids[CREATED_SLOTS]; /* datasets made by H5Dcreate2 */
/* The file selections H5Dread/H5Dwrite need not ask libhdf5 about (its three selection queries are about
 * 0.26 µs per call in a thread-safe build): a regular hyperslab set with H5S_SELECT_SET on a dataspace id,
 * kept while every later change of that id goes through a hooked call. Any change the entry does not
 * follow (other ops, H5Sselect_elements/all/none/adjust/copy, H5Smodify_select, H5Soffset_simple, a new
 * extent, H5Sclose, H5Idec_ref, H5close) removes it, and an id without an entry is asked of libhdf5 as
 * before. Direct-mapped: a collision drops the older entry, which costs speed, never correctness. */
struct spacesel { struct h5lib *lib; hid_t id; int rank; hsize_t start[MAXD], stride[MAXD], count[MAXD], block[MAXD]; };
static struct spacesel spaces[SPACE_SLOTS];
static uint32_t n_dsets;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Not taken while glibc says the process has one thread: a C program's loop then pays no atomic operations
 * (0.036 µs of a 5.2 µs box read in one run of 40 alternating pairs; within the noise in two shorter ones). Safe
 * because no locked section starts a thread, and a process never goes back from several threads to one (a
 * forked child starts with one, its lock initialized). */
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define LOCK() do { if (!__libc_single_threaded) pthread_mutex_lock(&lock); } while (0)
#define UNLOCK() do { if (!__libc_single_threaded) pthread_mutex_unlock(&lock); } while (0)
#else
#define LOCK() pthread_mutex_lock(&lock)
#define UNLOCK() pthread_mutex_unlock(&lock)
#endif

static char out_dir[4096];
static int recording;
static int meta_fd = -1, acc_fd = -1;
static pid_t out_pid;
static int n_acc;          /* records in the batch being filled (`batch`) */
static uint32_t acc_width; /* its records' width: the most dimensions among them */
static uint64_t n_acc_total;
static char *meta_buf;
static size_t meta_len, meta_cap;
static long long last_flush_ns;
/* This library is only ever loaded by LD_PRELOAD at start-up (the tracer opens it with RTLD_NOLOAD), so its
 * thread variables can sit in the static TLS block: read at a fixed offset, without a __tls_get_addr call
 * each. */
#define TLS __thread __attribute__((tls_model("initial-exec")))
static TLS pid_t my_tid;
/* per thread: the last call sites' libraries, and the last memory type's size (most loops repeat both) */
#if !defined(IOADV_WRAP) && !defined(IOADV_VOL)
static TLS struct { void *ret; struct caller *caller; } sites[SITE_SLOTS];
#endif
static TLS hid_t last_mem_type = -1;
static TLS struct h5lib *last_mem_lib;
static TLS size_t last_mem_size;

/* ---- the clock: CLOCK_MONOTONIC (Python's time.perf_counter), read from the time-stamp counter ---- */

static long long clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Where the CPU's time-stamp counter is invariant, a call is timed by it: two clock_gettime calls cost a C box
 * read 0.036 µs more than two rdtsc (40 alternating pairs of a 5.2 µs read). The count is converted with the
 * rate between two readings of both clocks at least MIN_ANCHOR_NS apart, read again at every flush (FLUSH_NS at
 * most), so the conversion never extrapolates far and stays within a microsecond of clock_gettime, which the
 * h5py hooks' spans are timed with. Before the first rate, and without an invariant counter, clock_gettime. */
#define MIN_ANCHOR_NS 10000000LL
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
static struct { unsigned seq; long long ns; unsigned long long tsc; double per_tick; } anchor; /* seq odd: changing */
static long long first_ns;
static unsigned long long first_tsc;
static int tsc_usable; /* 0 not asked yet, 1 invariant, -1 not */

/* (lock held, or one thread) */
static void reanchor(void) {
    if (!tsc_usable) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (__get_cpuid_max(0x80000000, NULL) >= 0x80000007) __cpuid(0x80000007, a, b, c, d);
        tsc_usable = d & (1u << 8) ? 1 : -1; /* "invariant TSC": constant rate, never stops */
    }
    if (tsc_usable < 0) return;
    long long ns = clock_ns();
    unsigned long long tsc = __rdtsc();
    if (first_ns && ns - first_ns < MIN_ANCHOR_NS) return;
    if (first_ns && tsc > first_tsc) {
        __atomic_add_fetch(&anchor.seq, 1, __ATOMIC_ACQ_REL);
        anchor.ns = ns;
        anchor.tsc = tsc;
        anchor.per_tick = (double)(ns - first_ns) / (double)(tsc - first_tsc);
        __atomic_add_fetch(&anchor.seq, 1, __ATOMIC_RELEASE);
    }
    first_ns = ns;
    first_tsc = tsc;
}

static long long now_ns(void) {
    unsigned seq = __atomic_load_n(&anchor.seq, __ATOMIC_ACQUIRE);
    long long ns = anchor.ns;
    unsigned long long tsc = anchor.tsc;
    double per_tick = anchor.per_tick;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if ((seq & 1) || per_tick == 0.0 || __atomic_load_n(&anchor.seq, __ATOMIC_RELAXED) != seq) return clock_ns();
    return ns + (long long)((double)(long long)(__rdtsc() - tsc) * per_tick);
}
static double anchor_rate(void) { return anchor.per_tick; }
#else
static void reanchor(void) {}
static double anchor_rate(void) { return 1.0; }
static long long now_ns(void) { return clock_ns(); }
#endif

static void write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; /* a full disk loses records, never the program */
        }
        p += w;
        len -= (size_t)w;
    }
}

/* ---- output (all under lock) ---- */

static int open_outputs(void) {
    pid_t pid = getpid();
    if (meta_fd >= 0 && out_pid == pid) return 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/h5-%d.meta", out_dir, (int)pid);
    meta_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    snprintf(path, sizeof path, "%s/h5-%d.acc", out_dir, (int)pid);
    acc_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    out_pid = pid;
    if (meta_fd < 0 || acc_fd < 0) {
        recording = 0;
        return -1;
    }
    return 0;
}

/* The batch being filled. While its records are alike (batch_alike: all but t0, dt and start the same, a loop's
 * reads), in alike_out as it is written: its first record whole, then (t0, dt, start) of each (32 bytes a 2-D
 * read, where a whole record is 112). From the first record that is not alike, in `batch`, each record whole,
 * packed at acc_width as they come: one copy of each record into memory that stays in the caches (a
 * full-width buffer packed again at write time cost 0.02-0.03 µs a record more: 0.20 -> 0.17 µs per
 * one-element H5Dread). Written when full: each write() costs several µs whatever its size (256 records a
 * write cost 0.025 µs a record more than 4096). */
static unsigned char batch[sizeof(struct ioadv_batch) + BATCH_BYTES];
static unsigned char alike_out[sizeof batch];
static int batch_alike;
#define ALIKE_KEEP 64 /* alike records a batch holds before one that is not ends it, rather than unpacking it */

static size_t record_bytes(uint32_t width) { return HEAD_BYTES + 4 * sizeof(hsize_t) * width; }

static unsigned char *record_at(int i, uint32_t width) {
    return batch + sizeof(struct ioadv_batch) + (size_t)i * record_bytes(width);
}

static size_t own_bytes(uint32_t width) { return 2 * sizeof(double) + sizeof(hsize_t) * width; }

static unsigned char *own_at(int i, uint32_t width) { /* record i's t0, dt, start in an alike batch */
    return alike_out + sizeof(struct ioadv_batch) + record_bytes(width) + (size_t)i * own_bytes(width);
}

/* Lay the buffered records out at a larger width, in place: last record first, and in each its last
 * field first, so that nothing is overwritten before it has moved. The new dimensions are zero. */
static void widen_batch(uint32_t width) {
    uint32_t old = acc_width;
    for (int i = n_acc - 1; i >= 0; i--) {
        unsigned char *src = record_at(i, old), *dst = record_at(i, width);
        for (int f = 3; f >= 0; f--) {
            unsigned char *to = dst + HEAD_BYTES + (size_t)f * sizeof(hsize_t) * width;
            memmove(to, src + HEAD_BYTES + (size_t)f * sizeof(hsize_t) * old, sizeof(hsize_t) * old);
            memset(to + sizeof(hsize_t) * old, 0, sizeof(hsize_t) * (width - old));
        }
        memmove(dst, src, HEAD_BYTES);
    }
    acc_width = width;
}

/* r, of nd dimensions, whole at `width` into o */
static void pack(unsigned char *o, const struct ioadv_access *r, uint32_t nd, uint32_t width) {
    memcpy(o, r, HEAD_BYTES);
    /* element by element: a few values, where memcpy calls of a variable size cost more than the copy */
    hsize_t *v = (hsize_t *)(o + HEAD_BYTES);
    for (uint32_t k = 0; k < width; k++) {
        int in = k < nd; /* the dimensions beyond the record's own are zero */
        v[k] = in ? r->start[k] : 0;
        v[width + k] = in ? r->stride[k] : 0;
        v[2 * width + k] = in ? r->count[k] : 0;
        v[3 * width + k] = in ? r->block[k] : 0;
    }
}

/* r, of nd dimensions, is alike the first record of the alike batch being filled */
static int alike_first(const struct ioadv_access *r, uint32_t nd) {
    const unsigned char *f = alike_out + sizeof(struct ioadv_batch);
    size_t from = offsetof(struct ioadv_access, ds);
    if (nd != acc_width || memcmp((const unsigned char *)r + from, f + from, HEAD_BYTES - from)) return 0;
    const hsize_t *v = (const hsize_t *)(f + HEAD_BYTES);
    for (uint32_t k = 0; k < nd; k++)
        if (r->stride[k] != v[nd + k] || r->count[k] != v[2 * nd + k] || r->block[k] != v[3 * nd + k]) return 0;
    return 1;
}

static void add_own(const struct ioadv_access *r) {
    unsigned char *o = own_at(n_acc++, acc_width);
    memcpy(o, r, 2 * sizeof(double));
    memcpy(o + 2 * sizeof(double), r->start, sizeof(hsize_t) * acc_width);
}

/* The alike batch's records, whole in `batch`: one that is not alike came soon after it began. */
static void unpack_alike(void) {
    const unsigned char *first = alike_out + sizeof(struct ioadv_batch);
    for (int i = 0; i < n_acc; i++) {
        unsigned char *o = record_at(i, acc_width);
        const unsigned char *own = own_at(i, acc_width);
        memcpy(o, first, record_bytes(acc_width));
        memcpy(o, own, 2 * sizeof(double));
        memcpy(o + HEAD_BYTES, own + 2 * sizeof(double), sizeof(hsize_t) * acc_width);
    }
    batch_alike = 0;
}

static void flush_locked(void);

static void append_record(const struct ioadv_access *r) {
    uint32_t nd = r->ndim > MAXD ? MAXD : r->ndim;
    if (n_acc && batch_alike) {
        int same = alike_first(r, nd);
        if (same && own_at(n_acc + 1, acc_width) <= alike_out + sizeof alike_out) {
            add_own(r);
            return;
        }
        if (same || n_acc >= ALIKE_KEEP) {
            flush_locked(); /* full, or a run of alike records ended */
            if (n_acc) return; /* could not be written (no directory): lost, as the records before it */
        } else {
            unpack_alike();
        }
    }
    if (!n_acc) { /* a batch begins alike */
        acc_width = nd;
        batch_alike = 1;
        pack(alike_out + sizeof(struct ioadv_batch), r, nd, nd);
        add_own(r);
        return;
    }
    uint32_t width = nd > acc_width ? nd : acc_width;
    if (record_at(n_acc + 1, width) > batch + sizeof batch) { /* full */
        flush_locked();
        if (n_acc) return;
        append_record(r);
        return;
    }
    if (nd > acc_width) widen_batch(nd);
    pack(record_at(n_acc++, acc_width), r, nd, acc_width);
}

static void flush_locked(void) {
    reanchor();
    if (!recording || (!meta_len && !n_acc)) return;
    if (open_outputs() < 0) return;
    /* metadata first: an access never refers to a dataset not yet on disk */
    if (meta_len) write_all(meta_fd, meta_buf, meta_len);
    if (n_acc) {
        unsigned char *out = batch_alike ? alike_out : batch;
        struct ioadv_batch head = {batch_alike ? BATCH_ALIKE_MAGIC : BATCH_MAGIC, (uint32_t)n_acc, acc_width, 0};
        memcpy(out, &head, sizeof head);
        write_all(acc_fd, out, (size_t)((batch_alike ? own_at(n_acc, acc_width) : record_at(n_acc, acc_width)) - out));
    }
    meta_len = 0;
    n_acc = 0;
    acc_width = 0;
    last_flush_ns = now_ns();
}

static void meta_reserve(size_t more) {
    if (meta_len + more <= meta_cap) return;
    size_t cap = meta_cap ? meta_cap : 65536;
    while (cap < meta_len + more) cap *= 2;
    char *p = realloc(meta_buf, cap);
    if (!p) return;
    meta_buf = p;
    meta_cap = cap;
}

static void meta_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void meta_printf(const char *fmt, ...) {
    va_list ap;
    for (int attempt = 0; attempt < 2; attempt++) {
        meta_reserve(256);
        if (meta_cap - meta_len < 2) return;
        va_start(ap, fmt);
        int k = vsnprintf(meta_buf + meta_len, meta_cap - meta_len, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if ((size_t)k < meta_cap - meta_len) {
            meta_len += (size_t)k;
            return;
        }
        meta_reserve((size_t)k + 1);
    }
}

static void meta_string(const char *s) {
    meta_reserve(strlen(s) * 6 + 3);
    if (meta_cap - meta_len < strlen(s) * 6 + 3) return;
    char *o = meta_buf + meta_len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { *o++ = '\\'; *o++ = (char)*p; }
        else if (*p < 0x20) o += sprintf(o, "\\u%04x", *p);
        else *o++ = (char)*p;
    }
    *o++ = '"';
    meta_len = (size_t)(o - meta_buf);
}

static void meta_ulist(const hsize_t *v, size_t n) {
    meta_printf("[");
    for (size_t i = 0; i < n; i++) meta_printf(i ? ",%llu" : "%llu", v[i]);
    meta_printf("]");
}

/* ---- finding the caller's libhdf5 ---- */

#if defined(IOADV_WRAP) || defined(IOADV_VOL)
#ifdef IOADV_VOL
#define LIB_LINKED ",\"linked\":true,\"vol\":true"
#else
#define LIB_LINKED ",\"linked\":true"
#endif
static struct caller *linked_caller(void); /* h5wrap.c: the libhdf5 linked into the program, bound once */
static const char *linked_file(void);       /* the program's file */
static int interposer_serves(void);

static const char *object_file(void *addr) {
    (void)addr;
    return linked_file();
}

static struct caller *caller_for(void *ret) {
    (void)ret;
    return __atomic_load_n(&n_callers, __ATOMIC_ACQUIRE) ? &callers[0] : linked_caller();
}
#else
#define LIB_LINKED ""
static const char *object_file(void *addr) {
    Dl_info where;
    return dladdr(addr, &where) && where.dli_fname ? where.dli_fname : "";
}

static int is_self(void *fn) {
    Dl_info a, b;
    return dladdr(fn, &a) && dladdr((void *)&is_self, &b) && a.dli_fbase == b.dli_fbase;
}

#define BIND(field, name) lib->field = (__typeof__(lib->field))dlsym(h, name)

static struct h5lib *lib_for_real(void *real_read) {
    for (int i = 0; i < n_libs; i++)
        if ((void *)libs[i].Dread == real_read) return &libs[i];
    if (n_libs == MAX_LIBS) return NULL;
    Dl_info where;
    void *h = NULL;
    if (dladdr(real_read, &where) && where.dli_fname) h = dlopen(where.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return NULL;
    struct h5lib *lib = &libs[n_libs];
    memset(lib, 0, sizeof *lib);
    lib->index = n_libs;
    lib->Dread = (dread_t)real_read;
    BIND(Dwrite, "H5Dwrite");
    BIND(Dread_multi, "H5Dread_multi");
    BIND(Dwrite_multi, "H5Dwrite_multi");
    BIND(Dcreate2, "H5Dcreate2");
    BIND(Dset_extent, "H5Dset_extent");
    BIND(Dget_num_chunks, "H5Dget_num_chunks");
    BIND(Dchunk_iter, "H5Dchunk_iter");
    BIND(Iget_name, "H5Iget_name");
    BIND(Fget_name, "H5Fget_name");
    BIND(Iget_file_id, "H5Iget_file_id");
    BIND(Fget_intent, "H5Fget_intent");
    BIND(Fclose, "H5Fclose");
    BIND(Dclose, "H5Dclose");
    BIND(Fopen, "H5Fopen");
    BIND(Fget_access_plist, "H5Fget_access_plist");
    BIND(Pget_driver, "H5Pget_driver");
    BIND(FD_mpio_init, "H5FD_mpio_init");
    BIND(Dget_space, "H5Dget_space");
    BIND(Dget_type, "H5Dget_type");
    BIND(Dget_create_plist, "H5Dget_create_plist");
    BIND(Dget_access_plist, "H5Dget_access_plist");
    BIND(Sclose, "H5Sclose");
    BIND(Sselect_hyperslab, "H5Sselect_hyperslab");
    BIND(Sselect_all, "H5Sselect_all");
    BIND(Sselect_none, "H5Sselect_none");
    BIND(Sselect_elements, "H5Sselect_elements");
    BIND(Sselect_adjust, "H5Sselect_adjust");
    BIND(Sselect_copy, "H5Sselect_copy");
    BIND(Smodify_select, "H5Smodify_select");
    BIND(Soffset_simple, "H5Soffset_simple");
    BIND(Sset_extent_simple, "H5Sset_extent_simple");
    BIND(Sset_extent_none, "H5Sset_extent_none");
    BIND(Sextent_copy, "H5Sextent_copy");
    BIND(Sget_simple_extent_ndims, "H5Sget_simple_extent_ndims");
    BIND(Idec_ref, "H5Idec_ref");
    BIND(close, "H5close");
    BIND(Iclear_type, "H5Iclear_type");
    BIND(Idestroy_type, "H5Idestroy_type");
    BIND(Tclose, "H5Tclose");
    BIND(Pclose, "H5Pclose");
    BIND(Sget_simple_extent_dims, "H5Sget_simple_extent_dims");
    BIND(Sget_select_type, "H5Sget_select_type");
    BIND(Sget_select_npoints, "H5Sget_select_npoints");
    BIND(Sis_regular_hyperslab, "H5Sis_regular_hyperslab");
    BIND(Sget_regular_hyperslab, "H5Sget_regular_hyperslab");
    BIND(Sget_select_hyper_nblocks, "H5Sget_select_hyper_nblocks");
    BIND(Sget_select_hyper_blocklist, "H5Sget_select_hyper_blocklist");
    BIND(Sget_select_elem_npoints, "H5Sget_select_elem_npoints");
    BIND(Sget_select_elem_pointlist, "H5Sget_select_elem_pointlist");
    BIND(Tget_size, "H5Tget_size");
    BIND(Tget_class, "H5Tget_class");
    BIND(Tget_order, "H5Tget_order");
    BIND(Tget_sign, "H5Tget_sign");
    BIND(Tis_variable_str, "H5Tis_variable_str");
    BIND(Pget_layout, "H5Pget_layout");
    BIND(Pget_chunk, "H5Pget_chunk");
    BIND(Pget_nfilters, "H5Pget_nfilters");
    BIND(Pget_filter2, "H5Pget_filter2");
    BIND(Pget_chunk_cache, "H5Pget_chunk_cache");
    BIND(Pget_fill_value, "H5Pget_fill_value");
    BIND(Eget_auto2, "H5Eget_auto2");
    BIND(Eset_auto2, "H5Eset_auto2");
    BIND(get_libversion, "H5get_libversion");
    if (!lib->Dwrite || !lib->Iget_name || !lib->Fget_name || !lib->Dget_space || !lib->Dget_type ||
        !lib->Sget_simple_extent_dims || !lib->Sget_select_type || !lib->Sget_select_npoints ||
        !lib->Sis_regular_hyperslab || !lib->Sget_regular_hyperslab || !lib->Tget_size || !lib->Sclose ||
        !lib->Tclose || !lib->Eget_auto2 || !lib->Eset_auto2)
        lib->Iget_name = NULL; /* calls still pass through; nothing is recorded through this copy */
    unsigned maj = 0, min = 0, rel = 0;
    if (lib->get_libversion) lib->get_libversion(&maj, &min, &rel);
    if (maj * 100 + min < 114) lib->Dchunk_iter = NULL; /* its callback's signature settled in 1.14 */
    n_libs++;
    if (recording) {
        meta_printf("{\"t\":\"lib\",\"i\":%d,\"file\":", lib->index);
        meta_string(where.dli_fname);
        meta_printf(",\"version\":\"%u.%u.%u\",\"recorded\":%s}\n", maj, min, rel,
                    lib->Iget_name ? "true" : "false");
    }
    return lib;
}

/* The caller's library and the libhdf5 it is linked with; NULL when none is found. */
static struct caller *caller_for(void *ret) {
    unsigned site = (unsigned)((uintptr_t)ret >> 2) % SITE_SLOTS;
    if (sites[site].ret == ret && sites[site].caller) return sites[site].caller;
    Dl_info info;
    if (!dladdr(ret, &info)) return NULL;
    int n = __atomic_load_n(&n_callers, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (callers[i].base == info.dli_fbase) {
            sites[site].ret = ret;
            return sites[site].caller = &callers[i];
        }
    LOCK();
    struct caller *found = NULL;
    for (int i = 0; i < n_callers; i++)
        if (callers[i].base == info.dli_fbase) found = &callers[i];
    if (!found && n_callers < MAX_CALLERS) {
        void *real = NULL;
        void *h = dlopen(info.dli_fname && *info.dli_fname ? info.dli_fname : NULL, RTLD_NOLOAD | RTLD_LAZY);
        if (h) real = dlsym(h, "H5Dread");
        /* the main program (or a library linked normally): global scope, where this library comes first */
        if (!real || is_self(real)) real = dlsym(RTLD_NEXT, "H5Dread");
        struct h5lib *lib = real && !is_self(real) ? lib_for_real(real) : NULL;
        if (lib) {
            found = &callers[n_callers];
            found->base = info.dli_fbase;
            found->lib = lib;
            found->index = n_callers;
            if (recording) {
                meta_printf("{\"t\":\"caller\",\"i\":%d,\"lib\":%d,\"file\":", n_callers, lib->index);
                meta_string(info.dli_fname ? info.dli_fname : "");
                meta_printf("}\n");
            }
            __atomic_store_n(&n_callers, n_callers + 1, __ATOMIC_RELEASE);
        }
    }
    UNLOCK();
    return found;
}
#endif

/* ---- datasets ---- */

static uint64_t id_hash(struct h5lib *L, hid_t id) { return ((uint64_t)id * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)L->index; }

/* ---- dataspace selections set through hooked calls ---- */

static struct spacesel *space_slot(struct h5lib *L, hid_t space) { return &spaces[id_hash(L, space) % SPACE_SLOTS]; }

/* The id's selection may have changed in a way the table does not follow. */
static void forget_space(struct h5lib *L, hid_t space) {
    LOCK();
    struct spacesel *s = space_slot(L, space);
    if (s->lib == L && s->id == space) s->lib = NULL;
    UNLOCK();
}

/* After a successful H5Sselect_hyperslab(space, H5S_SELECT_SET, ...): the selection is exactly this. */
static void remember_hyperslab(struct h5lib *L, hid_t space, const hsize_t *start, const hsize_t *stride,
                               const hsize_t *count, const hsize_t *block) {
    LOCK();
    struct spacesel *s = space_slot(L, space);
    int rank = s->lib == L && s->id == space ? s->rank : 0;
    if (!rank) {
        s->lib = NULL;
        UNLOCK();
        rank = L->Sget_simple_extent_ndims ? L->Sget_simple_extent_ndims(space) : -1; /* once per id */
        if (rank < 1 || rank > MAXD) return;
        LOCK();
        s->lib = L;
        s->id = space;
        s->rank = rank;
    }
    for (int k = 0; k < rank; k++) {
        s->start[k] = start[k];
        s->stride[k] = stride ? stride[k] : 1;
        s->count[k] = count[k];
        s->block[k] = block ? block[k] : 1;
        if (!s->count[k] || !s->block[k]) s->lib = NULL; /* HDF5 selects nothing: asked, as before */
    }
    UNLOCK();
}

static void remember_created(struct h5lib *L, hid_t id) {
    uint64_t h = id_hash(L, id);
    for (uint32_t probe = 0; probe < 16; probe++) {
        __typeof__(created_ids[0]) *c = &created_ids[(h + probe) % CREATED_SLOTS];
        if (!c->lib) { c->lib = L; c->id = id; return; }
    }
}

static int was_created(struct h5lib *L, hid_t id) {
    uint64_t h = id_hash(L, id);
    for (uint32_t probe = 0; probe < 16; probe++) {
        __typeof__(created_ids[0]) *c = &created_ids[(h + probe) % CREATED_SLOTS];
        if (c->lib == L && c->id == id) return 1;
        if (!c->lib) return 0;
    }
    return 0;
}

static int chunk_row(const hsize_t *offset, unsigned filter_mask, haddr_t addr, hsize_t size, void *op_data) {
    (void)filter_mask;
    int *state = op_data; /* ndim, rows written so far */
    for (int k = 0; k < state[0]; k++) meta_printf(k || state[1] ? ",%llu" : "%llu", offset[k]);
    meta_printf(",%llu,%llu", (unsigned long long)addr, size);
    state[1]++;
    return 0;
}

/* Every chunk's grid offset, address and stored size, between HEAD and TAIL in the metadata; nothing where
 * libhdf5 cannot iterate chunks (before 1.14) or there are more than MAX_OFFSET_CHUNKS. */
static void list_chunks(struct h5lib *L, hid_t dset, int ndim, const char *head, const char *tail) {
    hsize_t nchunks = 0;
    if (!L->Dchunk_iter || !L->Dget_num_chunks || L->Dget_num_chunks(dset, H5S_ALL, &nchunks) < 0 ||
        nchunks > MAX_OFFSET_CHUNKS)
        return;
    size_t mark = meta_len;
    int state[2] = {ndim, 0};
    meta_printf("%s", head);
    if (L->Dchunk_iter(dset, 0, chunk_row, state) >= 0) {
        meta_printf("%s", tail);
    } else {
        meta_len = mark;
    }
}

static uint64_t name_hash(const char *name) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 0x100000001b3ULL;
    return h;
}

/* A read-only file's dataset (describe left its chunks for later): its chunk offsets now, after the program's
 * own reads, in an "o" line of the metadata (lock held). */
static void list_late(struct dsdesc *d, hid_t dset) {
    struct h5lib *L = d->lib;
    H5E_auto2_t func;
    void *data;
    char head[64];
    d->later = 0;
    L->Eget_auto2(H5E_DEFAULT, &func, &data);
    L->Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a failed query must print nothing */
    snprintf(head, sizeof head, "{\"t\":\"o\",\"i\":%u,\"offsets\":[", d->num);
    list_chunks(L, dset, d->ndim, head, "]}\n");
    L->Eset_auto2(H5E_DEFAULT, func, data);
}

/* At exit, the datasets the program left open (many xarray programs never close their files): registered with
 * atexit after libhdf5 registered its own end, so it runs first, while their ids are valid. */
static void list_left_open(void) {
    if (!recording) return;
    LOCK();
    for (int i = 0; i < DS_SLOTS; i++) {
        struct dsdesc *d = &dsets[i];
        char name[4096];
        H5E_auto2_t func;
        void *data;
        if (!d->lib || !d->later) continue;
        d->later = 0;
        d->lib->Eget_auto2(H5E_DEFAULT, &func, &data);
        d->lib->Eset_auto2(H5E_DEFAULT, NULL, NULL); /* an id closed unseen: no error printed */
        int same = d->lib->Iget_name(d->id, name, sizeof name) >= 0 && name_hash(name) == d->name_hash;
        d->lib->Eset_auto2(H5E_DEFAULT, func, data);
        if (same) list_late(d, d->id);
    }
    UNLOCK();
}

static pthread_once_t late_once = PTHREAD_ONCE_INIT;
static void late_at_exit(void) { atexit(list_left_open); }

static void describe(struct h5lib *L, hid_t dset, struct dsdesc *d) {
    /* called with lock held and HDF5's automatic error printing off */
    char name[4096] = "", file[4096] = "", cwd[4096] = "";
    if (L->Iget_name(dset, name, sizeof name) < 0) name[0] = 0;
    if (L->Fget_name(dset, file, sizeof file) < 0) file[0] = 0;
    hsize_t maxdims[MAX_RANK];
    hid_t space = L->Dget_space(dset);
    d->ndim = space >= 0 ? L->Sget_simple_extent_dims(space, d->dims, maxdims) : -1;
    if (space >= 0) L->Sclose(space);
    hid_t type = L->Dget_type(dset);
    int tclass = -1, order = -1, sign = -1, vstr = 0;
    d->tsize = 0;
    if (type >= 0) {
        d->tsize = L->Tget_size(type);
        if (L->Tget_class) tclass = L->Tget_class(type);
        if (L->Tget_order) order = L->Tget_order(type);
        if (L->Tget_sign && tclass == 0) sign = L->Tget_sign(type);
        if (L->Tis_variable_str && tclass == 3) vstr = L->Tis_variable_str(type) > 0;
    }
    meta_printf("{\"t\":\"d\",\"i\":%u,\"lib\":%d,\"file\":", d->num, L->index);
    if (file[0] && file[0] != '/' && getcwd(cwd, sizeof cwd)) {
        char abs[8200];
        snprintf(abs, sizeof abs, "%s/%s", cwd, file);
        meta_string(abs);
    } else {
        meta_string(file);
    }
    meta_printf(",\"path\":");
    meta_string(name);
    meta_printf(",\"dims\":");
    meta_ulist(d->dims, d->ndim > 0 ? (size_t)d->ndim : 0);
    meta_printf(",\"maxdims\":");
    meta_ulist(maxdims, d->ndim > 0 ? (size_t)d->ndim : 0);
    meta_printf(",\"null\":%s,\"class\":%d,\"size\":%zu,\"order\":%d,\"sign\":%d,\"vstr\":%d",
                d->ndim < 0 ? "true" : "false", tclass, d->tsize, order, sign, vstr);
    hid_t dcpl = L->Dget_create_plist ? L->Dget_create_plist(dset) : -1;
    int chunked = 0;
    if (dcpl >= 0) {
        int layout = L->Pget_layout ? L->Pget_layout(dcpl) : -1;
        chunked = layout == LAYOUT_CHUNKED;
        meta_printf(",\"layout\":%d", layout);
        if (layout == LAYOUT_CHUNKED && L->Pget_chunk) {
            hsize_t chunk[MAX_RANK];
            int nd = L->Pget_chunk(dcpl, MAX_RANK, chunk);
            meta_printf(",\"chunks\":");
            meta_ulist(chunk, nd > 0 ? (size_t)nd : 0);
        }
        int nf = L->Pget_nfilters && L->Pget_filter2 ? L->Pget_nfilters(dcpl) : 0;
        meta_printf(",\"filters\":[");
        for (int i = 0; i < nf; i++) {
            unsigned flags = 0, cd[32], config = 0;
            size_t ncd = 32;
            char fname[256] = "";
            int id = L->Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, &config);
            if (ncd > 32) ncd = 32;
            meta_printf("%s{\"id\":%d,\"flags\":%u,\"name\":", i ? "," : "", id, flags);
            meta_string(fname);
            meta_printf(",\"cd\":[");
            for (size_t k = 0; k < ncd; k++) meta_printf(k ? ",%u" : "%u", cd[k]);
            meta_printf("]}");
        }
        meta_printf("]");
        if (type >= 0 && L->Pget_fill_value && d->tsize > 0 && d->tsize <= 64 && (tclass == 0 || tclass == 1)) {
            unsigned char fill[64];
            if (L->Pget_fill_value(dcpl, type, fill) >= 0) {
                meta_printf(",\"fill\":\"");
                for (size_t k = 0; k < d->tsize; k++) meta_printf("%02x", fill[k]);
                meta_printf("\"");
            }
        }
        L->Pclose(dcpl);
    }
    if (type >= 0) L->Tclose(type);
    int created = was_created(L, dset);
    if (created) meta_printf(",\"created\":true");
    hid_t dapl = L->Dget_access_plist ? L->Dget_access_plist(dset) : -1;
    if (dapl >= 0) {
        size_t nslots = 0, nbytes = 0;
        double w0 = 0;
        if (L->Pget_chunk_cache && L->Pget_chunk_cache(dapl, &nslots, &nbytes, &w0) >= 0)
            meta_printf(",\"cache\":[%zu,%zu,%.17g]", nbytes, nslots, w0);
        L->Pclose(dapl);
    }
    int writable = 1; /* unless the file is known to be open read-only */
    if (L->Iget_file_id && L->Fget_intent && L->Fclose) {
        hid_t fid = L->Iget_file_id(dset);
        unsigned intent = 0;
        if (fid >= 0) {
            if (L->Fget_intent(fid, &intent) >= 0) {
                meta_printf(",\"intent\":%u", intent);
                writable = intent & 1;
            }
            /* the MPI-IO driver changes HDF5's caching (the only driver the models tell apart) */
            hid_t fapl = L->FD_mpio_init && L->Fget_access_plist && L->Pget_driver ? L->Fget_access_plist(fid) : -1;
            if (fapl >= 0) {
                if (L->Pget_driver(fapl) == L->FD_mpio_init()) meta_printf(",\"driver\":\"mpio\"");
                L->Pclose(fapl);
            }
            L->Fclose(fid);
        }
    }
    /* The chunk offsets of a file open for writing, as they are before the run writes. A read-only file's are
     * listed once, when the program closes the dataset (list_at_close): listed here they read the whole chunk
     * index ahead of the program's own reads, which then found it in memory (realsize.py r01: the traced reads
     * of a cold file faster than untraced ones). The VOL connector sees no H5Dclose: it lists here. */
#if defined(IOADV_VOL)
    writable = 1;
#endif
    d->later = 0;
    if (!writable) {
        d->later = chunked && !created && d->ndim > 0;
        d->name_hash = name_hash(name);
        if (d->later) pthread_once(&late_once, late_at_exit);
    } else if (!created && d->ndim > 0) {
        list_chunks(L, dset, d->ndim, ",\"offsets\":[", "]");
    }
    meta_printf("}\n");
}

/* This thread's last descriptions (start and end, CLOCK_MONOTONIC ns): a first sight describes the dataset inside
 * the call, before its own timed span, but inside the span of a recorder around it (the h5py hooks), and listing a
 * chunked dataset's chunk offsets reads its chunk index: 24 ms of the first of 24 column reads of a cold
 * 16384-chunk file (benchmarks/validation/realsize.py r03, recipe against verify). ioadv_described() tells that
 * recorder how much of its span this was. */
#define DESCRIBED_SLOTS 4
static TLS long long described[DESCRIBED_SLOTS][2];
static TLS unsigned n_described;

/* The dataset's description, made on first sight of this id (lock held). */
static struct dsdesc *dataset_for(struct h5lib *L, hid_t dset) {
    uint64_t h = id_hash(L, dset);
    for (uint32_t probe = 0; probe < 64; probe++) {
        struct dsdesc *d = &dsets[(h + probe) % DS_SLOTS];
        if (d->lib == L && d->id == dset) return d;
        if (!d->lib) {
            d->lib = L;
            d->id = dset;
            d->num = n_dsets++;
            H5E_auto2_t func;
            void *data;
            L->Eget_auto2(H5E_DEFAULT, &func, &data);
            L->Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a failed query must print nothing */
            long long *span = described[n_described++ % DESCRIBED_SLOTS];
            span[0] = clock_ns();
            describe(L, dset, d);
            span[1] = clock_ns();
            L->Eset_auto2(H5E_DEFAULT, func, data);
            return d;
        }
    }
    /* a long-running program that opened very many datasets: start the table over */
    memset(dsets, 0, sizeof dsets);
    return dataset_for(L, dset);
}

/* The description of an id already seen, or NULL (lock held). */
static struct dsdesc *dataset_seen(struct h5lib *L, hid_t dset) {
    uint64_t h = id_hash(L, dset);
    for (uint32_t probe = 0; probe < 64; probe++) {
        struct dsdesc *d = &dsets[(h + probe) % DS_SLOTS];
        if (d->lib == L && d->id == dset) return d;
        if (!d->lib) return NULL;
    }
    return NULL;
}

/* ---- one access ---- */

static void meta_selection(struct h5lib *L, hid_t space, int kind, int ndim, uint64_t seq) {
    hssize_t n = kind == KIND_BLOCKS ? L->Sget_select_hyper_nblocks(space) : L->Sget_select_elem_npoints(space);
    size_t per = kind == KIND_BLOCKS ? 2 * (size_t)ndim : (size_t)ndim;
    if (n < 0 || (size_t)n * per > MAX_SEL_VALUES) {
        meta_printf("{\"t\":\"s\",\"a\":%llu,\"kind\":\"%s\",\"truncated\":%lld}\n", (unsigned long long)seq,
                    kind == KIND_BLOCKS ? "blocks" : "points", (long long)n);
        return;
    }
    hsize_t *buf = malloc(sizeof(hsize_t) * ((size_t)n * per + 1));
    if (!buf) return;
    herr_t ok = kind == KIND_BLOCKS ? L->Sget_select_hyper_blocklist(space, 0, (hsize_t)n, buf)
                                    : L->Sget_select_elem_pointlist(space, 0, (hsize_t)n, buf);
    if (ok >= 0) {
        meta_printf("{\"t\":\"s\",\"a\":%llu,\"kind\":\"%s\",\"v\":", (unsigned long long)seq,
                    kind == KIND_BLOCKS ? "blocks" : "points");
        meta_ulist(buf, (size_t)n * per);
        meta_printf("}\n");
    }
    free(buf);
}

struct pending {
    struct ioadv_access rec;
    hid_t space; /* file selection to write out as a list (blocks, points), else -1 */
};

/* Everything about the access, asked before the real call. 0: record it after. */
/* Note a change of extent (lock taken here), made at t_ns (H5Dset_extent), or seen at the next access (-1:
 * another process's, or one made through a function not interposed). */
static void extent_changed(struct dsdesc *d, const hsize_t *dims, int nd, long long t_ns) {
    LOCK();
    if (nd == d->ndim && recording && memcmp(dims, d->dims, sizeof(hsize_t) * (size_t)nd)) {
        memcpy(d->dims, dims, sizeof(hsize_t) * (size_t)nd);
        meta_printf("{\"t\":\"r\",\"i\":%u,\"a\":%llu,", d->num, (unsigned long long)n_acc_total);
        if (t_ns >= 0) meta_printf("\"at\":%.9f,", (double)t_ns * 1e-9);
        meta_printf("\"dims\":");
        meta_ulist(dims, (size_t)nd);
        meta_printf("}\n");
    }
    UNLOCK();
}

/* Everything about the access, asked before the real call. 0: record it after.
 * The common case, a regular hyperslab set through a hooked H5Sselect_hyperslab, costs no HDF5 call;
 * others are asked (selection type and corners: three calls for a regular hyperslab). The extent is
 * asked only when the selection reaches beyond the one last seen (an append). */
static int prepare(struct caller *c, int op, hid_t dset, hid_t mem_type, hid_t file_space, struct pending *p) {
    struct h5lib *L = c->lib;
    struct ioadv_access *r = &p->rec;
    p->space = -1;
    LOCK();
    struct dsdesc *d = dataset_for(L, dset);
    int ndim = d->ndim;
    int known = 0;
    if (file_space > 2 && ndim > 0) {
        struct spacesel *s = space_slot(L, file_space);
        if (s->lib == L && s->id == file_space && s->rank == ndim) {
            known = 1;
            for (int k = 0; k < ndim; k++) {
                r->start[k] = s->start[k];
                r->stride[k] = s->stride[k];
                r->count[k] = s->count[k];
                r->block[k] = s->block[k];
            }
        }
    }
    UNLOCK();
    memset(r, 0, offsetof(struct ioadv_access, start));
    r->ds = d->num;
    r->op = (uint8_t)op;
    r->caller = (uint16_t)c->index;
    if (!my_tid) my_tid = (pid_t)syscall(SYS_gettid);
    r->tid = (uint32_t)my_tid;
    if (ndim < 0) return -1; /* a NULL dataspace holds no data */
    r->ndim = (uint8_t)ndim;
    if (mem_type != last_mem_type || L != last_mem_lib) {
        last_mem_size = L->Tget_size(mem_type);
        last_mem_type = mem_type;
        last_mem_lib = L;
    }
    hsize_t dims[MAX_RANK], maxdims[MAX_RANK];
    if (file_space == H5S_ALL) {
        hid_t space = L->Dget_space(dset);
        if (space < 0) return -1;
        int nd = L->Sget_simple_extent_dims(space, dims, maxdims);
        L->Sclose(space);
        if (nd != ndim) return -1;
        extent_changed(d, dims, nd, -1);
        r->kind = KIND_ALL;
        r->n = 1;
        for (int k = 0; k < ndim; k++) {
            r->n *= dims[k];
            if (k < MAXD) { r->start[k] = 0; r->stride[k] = 1; r->count[k] = 1; r->block[k] = dims[k]; }
        }
        r->nbytes = r->n * last_mem_size;
        return 0;
    }
    if (file_space <= 2) { /* invalid, or H5S_BLOCK / H5S_PLIST (HDF5 >= 1.14) */
        r->kind = KIND_OTHER;
        return 0;
    }
    int sel = known ? SEL_HYPERSLABS : L->Sget_select_type(file_space);
    if (known || (sel == SEL_HYPERSLABS && ndim <= MAXD && L->Sis_regular_hyperslab(file_space) > 0)) {
        r->kind = KIND_REGULAR;
        if (!known) L->Sget_regular_hyperslab(file_space, r->start, r->stride, r->count, r->block);
        int beyond = 0;
        r->n = 1;
        for (int k = 0; k < ndim; k++) {
            r->n *= r->count[k] * r->block[k];
            if (r->count[k] && r->block[k] &&
                r->start[k] + r->stride[k] * (r->count[k] - 1) + r->block[k] > d->dims[k]) beyond = 1;
        }
        r->nbytes = r->n * last_mem_size;
        if (beyond && L->Sget_simple_extent_dims(file_space, dims, maxdims) == ndim) extent_changed(d, dims, ndim, -1);
        return 0;
    }
    if (L->Sget_simple_extent_dims(file_space, dims, maxdims) == ndim) {
        if (memcmp(dims, d->dims, sizeof(hsize_t) * (size_t)ndim)) extent_changed(d, dims, ndim, -1);
    }
    hssize_t npoints = L->Sget_select_npoints(file_space);
    r->n = npoints > 0 ? (uint64_t)npoints : 0;
    r->nbytes = r->n * last_mem_size;
    if (sel == SEL_ALL) {
        r->kind = KIND_ALL;
        for (int k = 0; k < ndim && k < MAXD; k++) {
            r->start[k] = 0; r->stride[k] = 1; r->count[k] = 1; r->block[k] = dims[k];
        }
    } else if (sel == SEL_NONE) {
        r->kind = KIND_NONE;
    } else if (sel == SEL_HYPERSLABS || sel == SEL_POINTS) {
        r->kind = sel == SEL_POINTS ? KIND_POINTS : KIND_BLOCKS;
        p->space = file_space; /* written out, under the lock, once the call succeeded */
    } else {
        r->kind = KIND_OTHER;
    }
    return 0;
}

static void commit(struct caller *c, struct pending *p) {
    LOCK();
    if (recording) {
        if (anchor_rate() == 0.0) reanchor(); /* the counter's rate, once MIN_ANCHOR_NS have passed */
        uint64_t seq = n_acc_total++;
        if (p->space >= 0) meta_selection(c->lib, p->space, p->rec.kind, p->rec.ndim, seq);
        append_record(&p->rec);
        if ((long long)(p->rec.t0 * 1e9) - last_flush_ns > FLUSH_NS) flush_locked();
    }
    UNLOCK();
}

#define INTERPOSE(OP, REAL, BUFTYPE)                                                                \
    struct caller *c = caller_for(__builtin_return_address(0));                                    \
    if (!c) {                                                                                       \
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");   \
        return -1;                                                                                  \
    }                                                                                               \
    if (!recording || !c->lib->Iget_name)                                                           \
        return c->lib->REAL(dset, mem_type, mem_space, file_space, dxpl, buf);                     \
    struct pending p;                                                                               \
    int ok = prepare(c, OP, dset, mem_type, file_space, &p);                                        \
    long long t0 = now_ns();                                                                        \
    herr_t status = c->lib->REAL(dset, mem_type, mem_space, file_space, dxpl, buf);                \
    long long t1 = now_ns();                                                                        \
    if (ok == 0 && status >= 0) {                                                                   \
        p.rec.t0 = (double)t0 * 1e-9;                                                              \
        p.rec.dt = (double)(t1 - t0) * 1e-9;                                                       \
        commit(c, &p);                                                       \
    }                                                                                               \
    return status;

/* One call moving several datasets' selections: one access each, the call's duration shared out evenly
 * (HDF5 does not say how it splits the time). */
#define INTERPOSE_MULTI(OP, REAL)                                                                   \
    struct caller *c = caller_for(__builtin_return_address(0));                                    \
    if (!c || !c->lib->REAL) {                                                                      \
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");   \
        return -1;                                                                                  \
    }                                                                                               \
    struct pending *p = recording && c->lib->Iget_name && count ? malloc(sizeof *p * count) : NULL; \
    int *ok = p ? malloc(sizeof *ok * count) : NULL;                                                \
    if (!ok) {                                                                                      \
        free(p);                                                                                    \
        return c->lib->REAL(count, dset, mem_type, mem_space, file_space, dxpl, buf);              \
    }                                                                                               \
    for (size_t i = 0; i < count; i++) ok[i] = prepare(c, OP, dset[i], mem_type[i], file_space[i], &p[i]); \
    long long t0 = now_ns();                                                                        \
    herr_t status = c->lib->REAL(count, dset, mem_type, mem_space, file_space, dxpl, buf);         \
    long long t1 = now_ns();                                                                        \
    for (size_t i = 0; i < count && status >= 0; i++) {                                             \
        if (ok[i]) continue;                                                                        \
        p[i].rec.t0 = (double)(t0 + (t1 - t0) * (long long)i / (long long)count) * 1e-9;          \
        p[i].rec.dt = (double)(t1 - t0) * 1e-9 / (double)count;                                    \
        commit(c, &p[i]);                                                                           \
    }                                                                                               \
    free(p);                                                                                        \
    free(ok);                                                                                       \
    return status;

herr_t HOOK(H5Dread_multi)(size_t count, hid_t dset[], hid_t mem_type[], hid_t mem_space[], hid_t file_space[],
                     hid_t dxpl, void *buf[]) {
    INTERPOSE_MULTI(0, Dread_multi)
}

herr_t HOOK(H5Dwrite_multi)(size_t count, hid_t dset[], hid_t mem_type[], hid_t mem_space[], hid_t file_space[],
                      hid_t dxpl, const void *buf[]) {
    INTERPOSE_MULTI(1, Dwrite_multi)
}

hid_t HOOK(H5Dcreate2)(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl, hid_t dapl) {
    struct caller *c = caller_for(__builtin_return_address(0));
    if (!c || !c->lib->Dcreate2) {
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");
        return -1;
    }
    hid_t id = c->lib->Dcreate2(loc, name, type, space, lcpl, dcpl, dapl);
    if (id >= 0 && recording) {
        LOCK();
        remember_created(c->lib, id);
        UNLOCK();
    }
    return id;
}

/* Timed by the call itself: the next access may come much later, or never (the file is closed). A change
 * made inside an h5py resize is dropped in Python (recorded by the h5py hook). */
herr_t HOOK(H5Dset_extent)(hid_t dset, const hsize_t size[]) {
    struct caller *c = caller_for(__builtin_return_address(0));
    if (!c || !c->lib->Dset_extent) {
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");
        return -1;
    }
    struct dsdesc *d = NULL;
    if (recording && c->lib->Iget_name) { /* described before the change: a new dataset enters with its old extent */
        LOCK();
        d = dataset_for(c->lib, dset);
        UNLOCK();
    }
    long long t0 = now_ns();
    herr_t status = c->lib->Dset_extent(dset, size);
    if (status >= 0 && d && d->ndim > 0) extent_changed(d, size, d->ndim, t0);
    return status;
}

/* ---- path substitution (ioadvisor run --substitute): IOADVISOR_H5_SUBSTITUTE holds SRC=DEST pairs separated
 * by ':', SRC as realpath(3) gives it; an H5Fopen of SRC (by any name that resolves to it) opens DEST. Read
 * once; a program that never sets it pays one getenv. Preloaded library only: the link-time wrapper and the
 * VOL connector do not hook H5Fopen. ---- */
#if !defined(IOADV_WRAP) && !defined(IOADV_VOL)

#define SUBST_MAX 16
static struct { char *src, *dest; } substs[SUBST_MAX];
static int n_substs;
static pthread_once_t substs_once = PTHREAD_ONCE_INIT;

static void substs_load(void) {
    const char *env = getenv("IOADVISOR_H5_SUBSTITUTE");
    char *copy = env && *env ? strdup(env) : NULL, *save = NULL;
    for (char *pair = copy ? strtok_r(copy, ":", &save) : NULL; pair && n_substs < SUBST_MAX;
         pair = strtok_r(NULL, ":", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq || eq == pair || !eq[1]) continue;
        *eq = '\0';
        substs[n_substs].src = pair;
        substs[n_substs].dest = eq + 1;
        n_substs++;
    }
}

static const char *substituted(const char *name) {
    pthread_once(&substs_once, substs_load);
    if (!n_substs || !name) return name;
    char *real = realpath(name, NULL);
    if (!real) return name;
    const char *out = name;
    for (int i = 0; i < n_substs; i++)
        if (strcmp(real, substs[i].src) == 0) out = substs[i].dest;
    free(real);
    return out;
}

/* An open or close of a file, in an "f" line of the metadata (the model empties the chunk caches of a file's
 * datasets when it is opened again: instrumentation/opens.py). NAME as the program gave it, made absolute as
 * describe makes a dataset's file. */
static void file_event(const char *event, const char *name, long long t_ns) {
    char cwd[4096], abs[8200];
    if (!recording || !name || !*name) return;
    if (name[0] != '/' && getcwd(cwd, sizeof cwd)) {
        snprintf(abs, sizeof abs, "%s/%s", cwd, name);
        name = abs;
    }
    LOCK();
    if (recording) {
        meta_printf("{\"t\":\"f\",\"ev\":\"%s\",\"at\":%.9f,\"file\":", event, (double)t_ns * 1e-9);
        meta_string(name);
        meta_printf("}\n");
    }
    UNLOCK();
}

hid_t HOOK(H5Fopen)(const char *name, unsigned flags, hid_t fapl) {
    struct caller *c = caller_for(__builtin_return_address(0));
    hid_t (*real)(const char *, unsigned, hid_t) = c && c->lib->Fopen ? c->lib->Fopen : NULL;
    if (!real) { /* a caller whose libhdf5 is not found by its H5Dread: the next H5Fopen in global scope */
        void *next = dlsym(RTLD_NEXT, "H5Fopen");
        real = next && !is_self(next) ? (hid_t(*)(const char *, unsigned, hid_t))next : NULL;
    }
    if (!real) {
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");
        return -1;
    }
    hid_t fid = real(substituted(name), flags, fapl);
    if (fid >= 0 && recording) file_event("open", name, now_ns());
    return fid;
}

/* The file's name asked before the close (after it the id is gone); a failed query records nothing. */
herr_t HOOK(H5Fclose)(hid_t fid) {
    struct caller *c = caller_for(__builtin_return_address(0));
    if (!c || !c->lib->Fclose) {
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");
        return -1;
    }
    char file[4096] = "";
    long long t0 = 0;
    if (recording) {
        H5E_auto2_t func;
        void *data;
        c->lib->Eget_auto2(H5E_DEFAULT, &func, &data);
        c->lib->Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a bad id: the real call reports it, not this query */
        if (c->lib->Fget_name(fid, file, sizeof file) < 0) file[0] = 0;
        c->lib->Eset_auto2(H5E_DEFAULT, func, data);
        t0 = now_ns();
    }
    herr_t status = c->lib->Fclose(fid);
    if (status >= 0 && file[0]) file_event("close", file, t0);
    return status;
}
#endif

/* ---- what changes a dataspace's selection ---- */

#define REAL_OR_REFUSE(F)                                                                         \
    struct caller *c = caller_for(__builtin_return_address(0));                                    \
    if (!c || !c->lib->F) {                                                                         \
        fprintf(stderr, "ioadvisor: cannot find the libhdf5 behind this call; call refused\n");   \
        return -1;                                                                                  \
    }

/* A call that changes the space in a way the table does not follow: its entry goes (after the call:
 * a failed call may have changed it too). */
#define FORGET_AFTER(F, space, ...)                                                                 \
    REAL_OR_REFUSE(F)                                                                               \
    herr_t status = c->lib->F(__VA_ARGS__);                                                         \
    if (recording) forget_space(c->lib, space);                                                     \
    return status;

herr_t HOOK(H5Sselect_hyperslab)(hid_t space, seloper_t op, const hsize_t start[], const hsize_t stride[],
                           const hsize_t count[], const hsize_t block[]) {
    REAL_OR_REFUSE(Sselect_hyperslab)
    herr_t status = c->lib->Sselect_hyperslab(space, op, start, stride, count, block);
    if (recording) {
        if (status >= 0 && op == SELECT_SET) remember_hyperslab(c->lib, space, start, stride, count, block);
        else forget_space(c->lib, space);
    }
    return status;
}

herr_t HOOK(H5Sselect_all)(hid_t space) { FORGET_AFTER(Sselect_all, space, space) }
herr_t HOOK(H5Sselect_none)(hid_t space) { FORGET_AFTER(Sselect_none, space, space) }
herr_t HOOK(H5Sselect_elements)(hid_t space, seloper_t op, size_t n, const hsize_t *coord) {
    FORGET_AFTER(Sselect_elements, space, space, op, n, coord)
}
herr_t HOOK(H5Sselect_adjust)(hid_t space, const hssize_t *offset) { FORGET_AFTER(Sselect_adjust, space, space, offset) }
herr_t HOOK(H5Sselect_copy)(hid_t dst, hid_t src) { FORGET_AFTER(Sselect_copy, dst, dst, src) }
herr_t HOOK(H5Smodify_select)(hid_t space1, seloper_t op, hid_t space2) {
    FORGET_AFTER(Smodify_select, space1, space1, op, space2)
}
herr_t HOOK(H5Soffset_simple)(hid_t space, const hssize_t *offset) { FORGET_AFTER(Soffset_simple, space, space, offset) }
herr_t HOOK(H5Sset_extent_simple)(hid_t space, int rank, const hsize_t dims[], const hsize_t max[]) {
    FORGET_AFTER(Sset_extent_simple, space, space, rank, dims, max)
}
herr_t HOOK(H5Sset_extent_none)(hid_t space) { FORGET_AFTER(Sset_extent_none, space, space) }
herr_t HOOK(H5Sextent_copy)(hid_t dst, hid_t src) { FORGET_AFTER(Sextent_copy, dst, dst, src) }
herr_t HOOK(H5Sclose)(hid_t space) { FORGET_AFTER(Sclose, space, space) }
int HOOK(H5Idec_ref)(hid_t id) { FORGET_AFTER(Idec_ref, id, id) }

static void forget_spaces_of(struct h5lib *L) {
    LOCK();
    for (int i = 0; i < SPACE_SLOTS; i++)
        if (spaces[i].lib == L) spaces[i].lib = NULL;
    UNLOCK();
}

/* Calls that end ids in bulk (a new id may then take an old number): every entry of that libhdf5 goes. */
herr_t HOOK(H5close)(void) {
    REAL_OR_REFUSE(close)
    herr_t status = c->lib->close();
    forget_spaces_of(c->lib);
    return status;
}

herr_t HOOK(H5Iclear_type)(int type, hbool_t force) {
    REAL_OR_REFUSE(Iclear_type)
    herr_t status = c->lib->Iclear_type(type, force);
    forget_spaces_of(c->lib);
    return status;
}

herr_t HOOK(H5Idestroy_type)(int type) {
    REAL_OR_REFUSE(Idestroy_type)
    herr_t status = c->lib->Idestroy_type(type);
    forget_spaces_of(c->lib);
    return status;
}

/* A dataset of a read-only file: its chunk offsets, listed as the program closes it (list_late). */
herr_t HOOK(H5Dclose)(hid_t dset) {
    REAL_OR_REFUSE(Dclose)
    if (recording) {
        LOCK();
        struct dsdesc *d = dataset_seen(c->lib, dset);
        if (d && d->later) list_late(d, dset);
        UNLOCK();
    }
    return c->lib->Dclose(dset);
}

herr_t HOOK(H5Dread)(hid_t dset, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl, void *buf) {
    INTERPOSE(0, Dread, void *)
}

herr_t HOOK(H5Dwrite)(hid_t dset, hid_t mem_type, hid_t mem_space, hid_t file_space, hid_t dxpl, const void *buf) {
    INTERPOSE(1, Dwrite, const void *)
}

/* ---- control, from the tracer (ctypes) ---- */

/* The trace's end in a traced Python process (before its own exit, whose atexit would be too late for the
 * trace): the read-only datasets still open, listed now (list_left_open). */
__attribute__((unused)) CONTROL void ioadv_list_late(void) { list_left_open(); }

CONTROL void ioadv_flush(void) {
    LOCK();
    flush_locked();
    UNLOCK();
}

/* Seconds this thread spent describing datasets between T0 and T1 (CLOCK_MONOTONIC seconds, Python's
 * time.perf_counter): bookkeeping of this library inside a call that an outer recorder timed from T0 to T1. */
__attribute__((unused)) CONTROL double ioadv_described(double t0, double t1) {
    long long lo = (long long)(t0 * 1e9), hi = (long long)(t1 * 1e9), ns = 0;
    for (unsigned k = 0; k < DESCRIBED_SLOTS; k++) {
        long long a = described[k][0] > lo ? described[k][0] : lo, b = described[k][1] < hi ? described[k][1] : hi;
        if (described[k][1] && b > a) ns += b - a;
    }
    return (double)ns * 1e-9;
}

/* Start recording into DIR (or stop with NULL); what was buffered goes to the old place first. FRESH: the
 * process's first start (the constructor), whose caches are as the loader zeroed them: clearing them again
 * touched every page of their 3 MB, about 2 ms of a traced program's start (page faults; perf stat of
 * benchmarks/c/h5loop.c "boxes 0", preloaded with and without a log directory). */
static void set_dir(const char *dir, int fresh) {
    LOCK();
    flush_locked();
    if (meta_fd >= 0) close(meta_fd);
    if (acc_fd >= 0) close(acc_fd);
    meta_fd = acc_fd = -1;
    recording = 0;
    if (dir && *dir && strlen(dir) < sizeof out_dir) {
        strcpy(out_dir, dir);
        recording = 1;
        /* the new files describe again what they refer to */
        if (!fresh) {
            memset(dsets, 0, sizeof dsets);
            memset(spaces, 0, sizeof spaces); /* changes made while not recording were not followed */
        }
        n_dsets = 0;
        for (int i = 0; i < n_libs; i++) {
            unsigned maj = 0, min = 0, rel = 0;
            if (libs[i].get_libversion) libs[i].get_libversion(&maj, &min, &rel);
            meta_printf("{\"t\":\"lib\",\"i\":%d,\"file\":", i);
            meta_string(object_file((void *)libs[i].Dread));
            meta_printf(",\"version\":\"%u.%u.%u\",\"recorded\":%s" LIB_LINKED "}\n", maj, min, rel,
                        libs[i].Iget_name ? "true" : "false");
        }
        for (int i = 0; i < n_callers; i++) {
            meta_printf("{\"t\":\"caller\",\"i\":%d,\"lib\":%d,\"file\":", i, callers[i].lib->index);
            meta_string(object_file(callers[i].base));
            meta_printf("}\n");
        }
        n_acc_total = 0;
    }
    UNLOCK();
}

CONTROL void ioadv_set_dir(const char *dir) { set_dir(dir, 0); }

static void at_fork_child(void) {
    /* the parent writes what it buffered; the child starts its own files */
    pthread_mutex_init(&lock, NULL);
    meta_fd = acc_fd = -1;
    n_acc = 0;
    acc_width = 0;
    meta_len = 0;
    my_tid = 0;
    if (recording) {
        char dir[sizeof out_dir];
        strcpy(dir, out_dir);
        ioadv_set_dir(dir);
    }
}

__attribute__((constructor)) static void start(void) {
    const char *dir = getenv("IOADVISOR_H5_DIR");
    pthread_atfork(NULL, NULL, at_fork_child);
#if defined(IOADV_WRAP) || defined(IOADV_VOL)
    if (dir && *dir && interposer_serves()) return;
#endif
    if (dir && *dir) set_dir(dir, 1);
}

#if !defined(IOADV_WRAP) && !defined(IOADV_VOL)
#include <sys/mman.h>
#include <sys/stat.h>
/* At exit, in a process that made no call through a shared libhdf5: whether its program has libhdf5 linked in
 * (HDF5's version string is in every build, stripped or not), out of this library's reach, and neither the
 * link-time wrapper (its own string) nor the VOL connector records it. Written as a "static" line for the
 * trace to name the gap (instrumentation/linkage.py): a program started by a script or by another program is
 * not inspected by `ioadvisor run`. A scan of the program's file (in the page cache) cost a process of a 6.8 MB
 * python 1.0 ms of CPU (60 alternating pairs): done once per program file and log directory, each process of
 * the same file after the first finds its mark (exe-DEV-INODE-MTIME) there. */
static void note_linked_in(void) {
    const char *vol = getenv("HDF5_VOL_CONNECTOR");
    if (!recording || n_libs || (vol && !strncmp(vol, "ioadvisor", 9))) return;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return;
    char mark[4200];
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return;
    }
    snprintf(mark, sizeof mark, "%s/exe-%llx-%llx-%llx", out_dir, (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino, (unsigned long long)st.st_mtime);
    int marked = open(mark, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (marked < 0) { /* scanned by another process of this run already (or the directory is gone) */
        close(fd);
        return;
    }
    close(marked);
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED) return;
    static const char tag[] = "HDF5 library version: ", wrapper[] = "ioadvisor link-time wrapper";
    const char *at = memmem(data, (size_t)st.st_size, tag, sizeof tag - 1);
    if (at && !memmem(data, (size_t)st.st_size, wrapper, sizeof wrapper - 1)) {
        char version[32], exe[4096];
        size_t k = 0;
        for (at += sizeof tag - 1; k < sizeof version - 1 && at < (const char *)data + st.st_size &&
                                   ((*at >= '0' && *at <= '9') || *at == '.');
             at++)
            version[k++] = *at;
        version[k] = 0;
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        LOCK();
        meta_printf("{\"t\":\"static\",\"file\":");
        meta_string(exe);
        meta_printf(",\"version\":\"%s\"}\n", version);
        UNLOCK();
    }
    munmap(data, (size_t)st.st_size);
}
#else
static void note_linked_in(void) {}
#endif

__attribute__((destructor)) static void finish(void) {
    note_linked_in();
    ioadv_flush();
}
